#include "scheduler/ppo/runner.h"

namespace tteps::ppo {

double Runner::RunEpisode(Environment& env, const DecisionCallback& on_decision) {
  std::map<int, Pending> pending;  // each worker's decision still waiting for its reward
  double total = 0, reward = 0;
  bool has_reward = false;
  AgentObservation obs = env.Reset();
  while (true) {
    const Decision d = agent_->Act(obs.features, opts_.greedy);
    if (on_decision) on_decision(obs, d, reward, has_reward);
    pending[obs.worker] = {obs.features, d};
    EnvStep step = env.Step(d.action);
    const int w = step.next.worker;
    reward = step.reward;
    has_reward = step.has_reward;
    if (step.has_reward) total += step.reward;
    if (step.has_reward && pending.count(w)) {
      const Pending& p = pending[w];
      if (opts_.learn) {
        buffers_[w].push_back({p.observation, p.decision.action, p.decision.log_prob,
                               p.decision.value, reward, false});
      }
      pending.erase(w);
    }
    latest_[w] = step.next.features;
    if (step.done) {
      // The episode's end: no bootstrapping across it.
      for (auto& [worker, buffer] : buffers_) {
        if (!buffer.empty()) buffer.back().done = true;
      }
      MaybeUpdate();
      return total;
    }
    MaybeUpdate();
    obs = std::move(step.next);
  }
}

void Runner::MaybeUpdate() {
  if (!opts_.learn) return;
  size_t n = 0;
  for (const auto& [w, b] : buffers_) n += b.size();
  if (n == 0 || n < static_cast<size_t>(opts_.rollout)) return;
  std::vector<std::vector<Transition>> trajectories;
  std::vector<double> last_values;
  for (auto& [w, b] : buffers_) {
    if (b.empty()) continue;
    last_values.push_back(b.back().done || !latest_.count(w) ? 0.0 : agent_->Value(latest_[w]));
    trajectories.push_back(std::move(b));
    b.clear();
  }
  agent_->Update(trajectories, last_values);
  ++updates_;
}

}  // namespace tteps::ppo
