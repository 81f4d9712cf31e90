// The scheduler's accumulation-policy flags (--accumulation_policy, --alpha_min/max, --ppo_*).
#pragma once

#include <memory>

#include "scheduler/accumulation_policy.h"
#include "scheduler/ppo/live_policy.h"

namespace tteps::scheduler {

// Throws std::invalid_argument on a bad value.
void CheckPolicyFlags();
// The agent's part (--alpha_min/max, --ppo_*), for the scheduler and tteps-ppo-pretrain.
void CheckPpoFlags();
// The --ppo_* and --alpha_* flags (unchecked).
ppo::LivePolicyOptions PolicyOptionsFromFlags();
// nullptr for --accumulation_policy=fixed.
std::unique_ptr<AccumulationPolicy> MakePolicyFromFlags();

}  // namespace tteps::scheduler
