// The scheduler's accumulation-policy flags (--accumulation_policy, --alpha_min/max, --ppo_*).
#pragma once

#include <memory>

#include "scheduler/accumulation_policy.h"

namespace tteps::scheduler {

// Throws std::invalid_argument on a bad value.
void CheckPolicyFlags();
// nullptr for --accumulation_policy=fixed.
std::unique_ptr<AccumulationPolicy> MakePolicyFromFlags();

}  // namespace tteps::scheduler
