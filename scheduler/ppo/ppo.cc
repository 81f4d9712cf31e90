#include "scheduler/ppo/ppo.h"

#include <torch/torch.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>

#include "scheduler/ppo/gae.h"
#include "scheduler/ppo/ppo_loss.h"

namespace tteps::ppo {

torch::Tensor ClippedSurrogateLoss(const torch::Tensor& log_prob, const torch::Tensor& old_log_prob,
                                   const torch::Tensor& advantages, double epsilon) {
  const auto ratio = torch::exp(log_prob - old_log_prob);
  const auto unclipped = ratio * advantages;
  const auto clipped = torch::clamp(ratio, 1.0 - epsilon, 1.0 + epsilon) * advantages;
  return -torch::min(unclipped, clipped).mean();
}

void PpoConfig::Validate() const {
  if (observation_size < 1 || num_actions < 2 || hidden < 1) {
    throw std::invalid_argument("PPO network sizes must be positive (and >= 2 actions)");
  }
  if (!(lr > 0) || gamma < 0 || gamma > 1 || lambda < 0 || lambda > 1 || !(clip > 0)) {
    throw std::invalid_argument(
        "PPO needs --ppo_lr > 0, --ppo_gamma and --ppo_lambda in [0, 1], --ppo_clip > 0");
  }
  if (epochs < 1 || minibatch < 1) {
    throw std::invalid_argument("--ppo_epochs and --ppo_minibatch must be >= 1");
  }
}

namespace {

struct ActorCriticImpl : torch::nn::Module {
  ActorCriticImpl(int in, int hidden, int actions)
      : actor(torch::nn::Sequential(torch::nn::Linear(in, hidden), torch::nn::Tanh(),
                                    torch::nn::Linear(hidden, hidden), torch::nn::Tanh(),
                                    torch::nn::Linear(hidden, actions))),
        critic(torch::nn::Sequential(torch::nn::Linear(in, hidden), torch::nn::Tanh(),
                                     torch::nn::Linear(hidden, hidden), torch::nn::Tanh(),
                                     torch::nn::Linear(hidden, 1))) {
    register_module("actor", actor);
    register_module("critic", critic);
  }
  torch::nn::Sequential actor, critic;
};
TORCH_MODULE(ActorCritic);

torch::Tensor ToTensor(const std::vector<float>& v) {
  return torch::from_blob(const_cast<float*>(v.data()), {1, static_cast<int64_t>(v.size())},
                          torch::kFloat)
      .clone();
}

void CheckObservation(const std::vector<float>& obs, int size) {
  if (static_cast<int>(obs.size()) != size) {
    throw std::invalid_argument("observation of " + std::to_string(obs.size()) +
                                " floats, the policy takes " + std::to_string(size));
  }
}

}  // namespace

struct PpoAgent::Impl {
  explicit Impl(PpoConfig c)
      : config(std::move(c)),
        generator(at::detail::createCPUGenerator(config.seed)),
        shuffle(config.seed) {
    config.Validate();
    torch::manual_seed(config.seed);  // the network's initial weights
    net = ActorCritic(config.observation_size, config.hidden, config.num_actions);
    optimizer = std::make_unique<torch::optim::Adam>(net->parameters(),
                                                     torch::optim::AdamOptions(config.lr));
  }

  void CheckSize(const std::vector<float>& obs) const {
    CheckObservation(obs, config.observation_size);
  }

  PpoConfig config;
  at::Generator generator;  // action sampling, independent of the global RNG
  std::mt19937_64 shuffle;  // minibatch order
  ActorCritic net{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer;
};

PpoAgent::PpoAgent(PpoConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}
PpoAgent::~PpoAgent() = default;
const PpoConfig& PpoAgent::config() const { return impl_->config; }

Decision PpoAgent::Act(const std::vector<float>& observation, bool greedy) {
  impl_->CheckSize(observation);
  torch::NoGradGuard no_grad;
  const auto x = ToTensor(observation);
  const auto log_probs = torch::log_softmax(impl_->net->actor->forward(x), 1);
  Decision d;
  d.action =
      greedy ? static_cast<int>(log_probs.argmax(1).item<int64_t>())
             : static_cast<int>(
                   torch::multinomial(log_probs.exp(), 1, false, impl_->generator).item<int64_t>());
  d.log_prob = log_probs[0][d.action].item<double>();
  d.value = impl_->net->critic->forward(x).item<double>();
  return d;
}

double PpoAgent::Value(const std::vector<float>& observation) {
  impl_->CheckSize(observation);
  torch::NoGradGuard no_grad;
  return impl_->net->critic->forward(ToTensor(observation)).item<double>();
}

namespace {

// The trajectories as one batch: observations, actions, old log-probabilities, and GAE's
// advantages and returns.
struct PpoBatch {
  std::vector<float> obs;
  std::vector<int64_t> actions;
  std::vector<float> old_log_probs, advantages, returns;
};

PpoBatch Gather(const PpoConfig& c, const std::vector<std::vector<Transition>>& trajectories,
                const std::vector<double>& last_values) {
  PpoBatch batch;
  for (size_t t = 0; t < trajectories.size(); ++t) {
    const auto& traj = trajectories[t];
    if (traj.empty()) continue;
    std::vector<double> rewards, values;
    std::vector<bool> dones;
    for (const auto& tr : traj) {
      CheckObservation(tr.observation, c.observation_size);
      rewards.push_back(tr.reward);
      values.push_back(tr.value);
      dones.push_back(tr.done);
      batch.obs.insert(batch.obs.end(), tr.observation.begin(), tr.observation.end());
      batch.actions.push_back(tr.action);
      batch.old_log_probs.push_back(static_cast<float>(tr.log_prob));
    }
    const auto gae = ComputeGae(rewards, values, dones, last_values.at(t), c.gamma, c.lambda);
    batch.advantages.insert(batch.advantages.end(), gae.advantages.begin(), gae.advantages.end());
    batch.returns.insert(batch.returns.end(), gae.returns.begin(), gae.returns.end());
  }
  return batch;
}

}  // namespace

UpdateStats PpoAgent::Update(const std::vector<std::vector<Transition>>& trajectories,
                             const std::vector<double>& last_values) {
  const PpoConfig& c = impl_->config;
  PpoBatch batch = Gather(c, trajectories, last_values);
  UpdateStats stats;
  const int64_t n = static_cast<int64_t>(batch.actions.size());
  stats.transitions = n;
  if (n == 0) return stats;

  const auto obs_t =
      torch::from_blob(batch.obs.data(), {n, c.observation_size}, torch::kFloat).clone();
  const auto act_t = torch::from_blob(batch.actions.data(), {n}, torch::kLong).clone();
  const auto old_t = torch::from_blob(batch.old_log_probs.data(), {n}, torch::kFloat).clone();
  auto adv_t = torch::from_blob(batch.advantages.data(), {n}, torch::kFloat).clone();
  const auto ret_t = torch::from_blob(batch.returns.data(), {n}, torch::kFloat).clone();
  if (n > 1) adv_t = (adv_t - adv_t.mean()) / (adv_t.std() + 1e-8);

  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  int64_t batches = 0;
  for (int epoch = 0; epoch < c.epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), impl_->shuffle);
    for (int64_t b = 0; b < n; b += c.minibatch) {
      const int64_t e = std::min<int64_t>(n, b + c.minibatch);
      const auto idx = torch::from_blob(order.data() + b, {e - b}, torch::kLong).clone();
      const auto x = obs_t.index_select(0, idx);
      const auto log_probs_all = torch::log_softmax(impl_->net->actor->forward(x), 1);
      const auto log_prob =
          log_probs_all.gather(1, act_t.index_select(0, idx).unsqueeze(1)).squeeze(1);
      const auto entropy = -(log_probs_all.exp() * log_probs_all).sum(1).mean();
      const auto old = old_t.index_select(0, idx);
      const auto adv = adv_t.index_select(0, idx);
      const auto policy_loss = ClippedSurrogateLoss(log_prob, old, adv, c.clip);
      const auto value = impl_->net->critic->forward(x).squeeze(1);
      const auto value_loss = (value - ret_t.index_select(0, idx)).pow(2).mean();
      const auto loss = policy_loss + c.value_coef * value_loss - c.entropy_coef * entropy;
      impl_->optimizer->zero_grad();
      loss.backward();
      torch::nn::utils::clip_grad_norm_(impl_->net->parameters(), c.max_grad_norm);
      impl_->optimizer->step();

      torch::NoGradGuard no_grad;
      stats.policy_loss += policy_loss.item<double>();
      stats.value_loss += value_loss.item<double>();
      stats.entropy += entropy.item<double>();
      stats.clip_fraction += ((torch::exp(log_prob - old) - 1.0).abs() > c.clip)
                                 .to(torch::kFloat)
                                 .mean()
                                 .item<double>();
      ++batches;
    }
  }
  stats.policy_loss /= batches;
  stats.value_loss /= batches;
  stats.entropy /= batches;
  stats.clip_fraction /= batches;
  return stats;
}

void PpoAgent::Save(const std::string& path) const {
  torch::serialize::OutputArchive archive;
  impl_->net->save(archive);
  archive.write("observation_size", torch::tensor(int64_t{impl_->config.observation_size}));
  archive.write("hidden", torch::tensor(int64_t{impl_->config.hidden}));
  archive.write("num_actions", torch::tensor(int64_t{impl_->config.num_actions}));
  archive.save_to(path);
}

void PpoAgent::Load(const std::string& path) {
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path);
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot read the policy " + path + ": " + e.what());
  }
  torch::Tensor in, hidden, actions;
  archive.read("observation_size", in);
  archive.read("hidden", hidden);
  archive.read("num_actions", actions);
  const auto& c = impl_->config;
  if (in.item<int64_t>() != c.observation_size || hidden.item<int64_t>() != c.hidden ||
      actions.item<int64_t>() != c.num_actions) {
    throw std::runtime_error("the policy " + path + " has " + std::to_string(in.item<int64_t>()) +
                             " inputs, " + std::to_string(hidden.item<int64_t>()) +
                             " hidden units and " + std::to_string(actions.item<int64_t>()) +
                             " actions; this agent " + std::to_string(c.observation_size) + ", " +
                             std::to_string(c.hidden) + " and " + std::to_string(c.num_actions));
  }
  impl_->net->load(archive);
}

}  // namespace tteps::ppo
