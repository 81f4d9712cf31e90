// The PPO2 agent on a thread of its own, playing one episode of the live environment: the
// thread both accumulation scopes (live_policy.h) run beside the coordination loop.
#pragma once

#include <cstdint>
#include <string>
#include <thread>

#include "scheduler/ppo/live_environment.h"
#include "scheduler/ppo/live_policy.h"
#include "scheduler/ppo/ppo.h"

namespace tteps::ppo {

class AgentThread {
 public:
  // Loads options.policy_in first (throws std::runtime_error if it cannot), then starts.
  AgentThread(const LivePolicyOptions& options, LiveEnvironment* env);
  ~AgentThread() { Finish(); }
  AgentThread(const AgentThread&) = delete;
  AgentThread& operator=(const AgentThread&) = delete;

  // Ends the episode, joins the thread and saves the policy if asked. Returns an error text, or
  // "" if the agent ran without failure. Idempotent.
  std::string Finish();
  // Where its policy came from and went, whether it learned and how many updates it made (after
  // Finish), as a JSON object's text.
  std::string Record() const;

 private:
  LivePolicyOptions options_;
  LiveEnvironment* env_;
  PpoAgent agent_;
  std::thread thread_;
  std::string error_;
  int64_t updates_ = 0;  // written by the thread, read after it is joined
};

}  // namespace tteps::ppo
