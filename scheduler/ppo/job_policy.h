// --accumulation_policy ppo --ppo_scope job: the agent chooses the global batch and the speed
// split (scheduler/speed_shares.h, as the speed policy sends it) allocates it over the
// workers. Once every slice the decisions may change has reported a window at its current
// accumulation (a round), their windows are merged into one job window for the agent: its
// "alpha" is the workers' mean accumulation, which it halves, keeps or doubles. The new global
// batch (mean x slices) is then split by the speeds measured in the round, and a slice's
// decision is sent where its accumulation changes. Besides the merged window the agent sees
// how much the slices' speeds differ and how balanced their split is (SplitView in
// observation.h). What the agent cannot see from one worker, how much the batch as a whole
// buys, is what it decides; what a heuristic does well, evening out the workers' speeds, is
// left to the heuristic.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "scheduler/accumulation_policy.h"
#include "scheduler/ppo/live_policy.h"
#include "scheduler/ppo/observation.h"

namespace tteps::ppo {

// The job's window from one window per slice: worker 0, alpha `mean_alpha`; the per-step losses
// averaged over the slices (sync: their windows cover the same steps; the shortest bounds
// them); trips, extra micro-batches and noise-measuring steps summed, the noise averaged by
// those steps; compute the slowest slice's (what a step waits for), step and window seconds
// the longest, waiting and staleness the mean.
WindowReport MergeWindows(const std::vector<WindowReport>& windows, int64_t mean_alpha);

// Starts the agent's thread (throws std::runtime_error if options.policy_in cannot be loaded).
// `accumulation` must be a power of two times options.alpha_min within [alpha_min, alpha_max]
// for halving and doubling to reach every other.
std::unique_ptr<scheduler::AccumulationPolicy> MakeJobPolicy(const LivePolicyOptions& options,
                                                             int workers, int64_t accumulation);

}  // namespace tteps::ppo
