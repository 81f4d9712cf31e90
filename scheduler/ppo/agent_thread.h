// The PPO2 agent on a thread of its own, playing one episode of the live environment: the
// thread both accumulation scopes (live_policy.h) run beside the coordination loop.
#pragma once

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

 private:
  LivePolicyOptions options_;
  LiveEnvironment* env_;
  PpoAgent agent_;
  std::thread thread_;
  std::string error_;
};

}  // namespace tteps::ppo
