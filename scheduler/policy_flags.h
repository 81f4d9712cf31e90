// The accumulation policy's flags (--accumulation_policy, --accumulation_min/max, --ppo_*), for
// the scheduler and tteps-ppo-pretrain.
#pragma once

#include "common/job_config.h"

namespace tteps::scheduler {

// The policy --ppo_policy_in shipped (the default) loads.
inline constexpr const char* kShippedPolicy = TTEPS_SOURCE_DIR "/scheduler/ppo/shipped_policy.pt";

// Unvalidated: JobConfig::Validate and CheckPpo check it.
PolicyConfig PolicyConfigFromFlags();

}  // namespace tteps::scheduler
