#include "scheduler/ppo/live_policy.h"

#include "scheduler/ppo/agent_thread.h"
#include "scheduler/ppo/job_policy.h"
#include "scheduler/ppo/live_environment.h"

namespace tteps::ppo {
namespace {

// Worker scope: every worker's window is an observation, and the decision sets its alpha.
class WorkerPolicy : public scheduler::AccumulationPolicy {
 public:
  explicit WorkerPolicy(const LivePolicyOptions& o)
      : env_(o.alpha_min, o.alpha_max, o.step_model), agent_(o, &env_) {}
  ~WorkerPolicy() override { Finish(); }

  void Observe(const WindowReport& report) override { env_.Push(report); }
  std::optional<scheduler::AlphaDecision> Poll() override { return env_.PollDecision(); }
  std::string Finish() override { return agent_.Finish(); }
  std::string Record() const override { return agent_.Record(); }

 private:
  LiveEnvironment env_;
  AgentThread agent_;  // after env_: it plays env_ until destroyed
};

}  // namespace

std::unique_ptr<scheduler::AccumulationPolicy> MakePpoPolicy(const LivePolicyOptions& options,
                                                             int workers, int64_t accumulation) {
  if (options.job_scope) return MakeJobPolicy(options, workers, accumulation);
  return std::make_unique<WorkerPolicy>(options);
}

}  // namespace tteps::ppo
