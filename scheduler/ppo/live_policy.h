// --accumulation_policy=ppo: the PPO2 agent on a thread of its own beside the coordination
// loop, joined to it by the live environment's two queues (window reports in, decisions out).
// Two scopes: the agent chooses each worker's alpha from that worker's windows (worker), or the
// global batch from the job's windows, split over the workers by their speed (job,
// job_policy.h).
#pragma once

#include <memory>
#include <string>

#include "common/gradient_noise.h"
#include "scheduler/accumulation_policy.h"
#include "scheduler/ppo/ppo.h"

namespace tteps::ppo {

struct LivePolicyOptions {
  PpoConfig ppo;
  int rollout = 32;  // transitions per update
  bool learn = true;
  int64_t alpha_min = 1, alpha_max = 16;
  std::string policy_in;   // load this policy first (e.g. pre-trained on the simulation)
  std::string policy_out;  // save the policy here when training ends
  bool job_scope = true;   // the agent sets the global batch (else each worker's alpha)
  StepModel step_model = StepModel::kScaledLr;  // of the goodput the agent is rewarded with
};

// `workers`, `accumulation`: the job's, every worker's alpha at the start. Throws
// std::runtime_error if policy_in cannot be loaded.
std::unique_ptr<scheduler::AccumulationPolicy> MakePpoPolicy(const LivePolicyOptions& options,
                                                             int workers, int64_t accumulation);

}  // namespace tteps::ppo
