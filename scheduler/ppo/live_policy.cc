#include "scheduler/ppo/live_policy.h"

#include <glog/logging.h>

#include <thread>

#include "scheduler/ppo/live_environment.h"
#include "scheduler/ppo/runner.h"

namespace tteps::ppo {
namespace {

class PpoPolicy : public scheduler::AccumulationPolicy {
 public:
  explicit PpoPolicy(const LivePolicyOptions& o)
      : options_(o), agent_(o.ppo), env_(o.alpha_min, o.alpha_max) {
    if (!o.policy_in.empty()) {
      agent_.Load(o.policy_in);
      LOG(INFO) << "PPO policy loaded from " << o.policy_in;
    }
    thread_ = std::thread([this] {
      try {
        Runner runner(&agent_, {options_.learn, false, options_.rollout});
        runner.RunEpisode(env_);
        LOG(INFO) << "PPO agent done: " << runner.updates() << " updates";
      } catch (const std::exception& e) {
        error_ = std::string("the PPO agent failed: ") + e.what();
        LOG(ERROR) << error_ << " (alphas stay as they are)";
      }
    });
  }
  ~PpoPolicy() override { Finish(); }

  void Observe(const WindowReport& report) override { env_.Push(report); }
  std::optional<scheduler::AlphaDecision> Poll() override { return env_.PollDecision(); }

  std::string Finish() override {
    if (!thread_.joinable()) return error_;
    env_.Finish();
    thread_.join();
    if (error_.empty() && !options_.policy_out.empty()) {
      try {
        agent_.Save(options_.policy_out);
        LOG(INFO) << "PPO policy saved to " << options_.policy_out;
      } catch (const std::exception& e) {
        error_ = "cannot save the PPO policy to " + options_.policy_out + ": " + e.what();
      }
    }
    return error_;
  }

 private:
  LivePolicyOptions options_;
  PpoAgent agent_;
  LiveEnvironment env_;
  std::thread thread_;
  std::string error_;
};

}  // namespace

std::unique_ptr<scheduler::AccumulationPolicy> MakePpoPolicy(const LivePolicyOptions& options) {
  return std::make_unique<PpoPolicy>(options);
}

}  // namespace tteps::ppo
