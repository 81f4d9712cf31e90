#include "scheduler/ppo/agent_thread.h"

#include <ATen/Parallel.h>
#include <glog/logging.h>

#include "common/json_writer.h"
#include "scheduler/ppo/runner.h"

namespace tteps::ppo {

AgentThread::AgentThread(const LivePolicyOptions& options, LiveEnvironment* env)
    : options_(options), env_(env), agent_(options.ppo) {
  if (!options_.policy_in.empty()) {
    agent_.Load(options_.policy_in);
    LOG(INFO) << "PPO policy loaded from " << options_.policy_in
              << (options_.learn ? "; it learns on, sampling its actions"
                                 : "; it acts on its most likely action (--ppo_learn: learn on)");
  }
  thread_ = std::thread([this] {
    at::init_num_threads();  // --threads, as on the main thread (model_evaluation.cc)
    try {
      // Sampling explores, which only a learning agent has use for: one that only acts takes
      // the most likely action, as the simulation's evaluations do.
      Runner runner(&agent_, {options_.learn, /*greedy=*/!options_.learn, options_.rollout});
      runner.RunEpisode(*env_);
      updates_ = runner.updates();
      LOG(INFO) << "PPO agent done: " << updates_ << " updates";
    } catch (const std::exception& e) {
      error_ = std::string("the PPO agent failed: ") + e.what();
      LOG(ERROR) << error_ << " (alphas stay as they are)";
    }
  });
}

std::string AgentThread::Record() const {
  JsonObject r;
  r.Add("policy_in", options_.policy_in).Add("learns", options_.learn);
  if (!thread_.joinable()) r.Add("updates", updates_);
  if (!options_.policy_out.empty()) r.Add("policy_out", options_.policy_out);
  return r.str();
}

std::string AgentThread::Finish() {
  if (!thread_.joinable()) return error_;
  env_->Finish();
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

}  // namespace tteps::ppo
