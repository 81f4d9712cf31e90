// The accumulation policy's flags (--accumulation_policy, --accumulation_min/max, --ppo_*), for
// the scheduler and tteps-ppo-pretrain.
#pragma once

#include "common/job_config.h"

namespace tteps::scheduler {

// The policies --ppo_policy_in shipped (the default) loads, for --ppo_scope job and worker
// (common/shipped_files.h finds them).
inline constexpr const char* kShippedPolicy = "scheduler/ppo/shipped_policy.pt";
inline constexpr const char* kShippedWorkerPolicy = "scheduler/ppo/shipped_worker_policy.pt";

// Unvalidated: JobConfig::Validate and CheckPpo check it.
PolicyConfig PolicyConfigFromFlags();

}  // namespace tteps::scheduler
