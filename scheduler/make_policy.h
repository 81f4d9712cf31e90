// The accumulation policy a job's configuration asks for.
#pragma once

#include <memory>

#include "common/job_config.h"
#include "scheduler/accumulation_policy.h"
#include "scheduler/ppo/live_policy.h"

namespace tteps::scheduler {

ppo::LivePolicyOptions LivePolicyOptionsOf(const PolicyConfig& p);
// The agent's part: bounds, rollout, network and optimizer settings, --ppo_policy_in readable.
// Throws std::invalid_argument.
void CheckPpo(const PolicyConfig& p);
// How the goodput of goodput and the agent counts a batch: a fixed Adam step for Adam without
// --lr_scaling, else a learning rate scaled with the batch (common/gradient_noise.h).
StepModel StepModelOf(const OptimizerConfig& o);
// nullptr for the fixed policy. `workers` and `accumulation` (the starting one): the speed
// policy keeps their product. Throws std::invalid_argument or std::runtime_error (a policy file
// that cannot be loaded).
std::unique_ptr<AccumulationPolicy> MakePolicy(const PolicyConfig& p, StepModel step_model,
                                               int workers, int64_t accumulation);

}  // namespace tteps::scheduler
