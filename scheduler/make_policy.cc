#include "scheduler/make_policy.h"

#include <fstream>
#include <stdexcept>

#include "scheduler/goodput_policy.h"
#include "scheduler/speed_policy.h"

namespace tteps::scheduler {

ppo::LivePolicyOptions LivePolicyOptionsOf(const PolicyConfig& p) {
  ppo::LivePolicyOptions o;
  o.ppo.lr = p.lr;
  o.ppo.gamma = p.gamma;
  o.ppo.lambda = p.lambda;
  o.ppo.clip = p.clip;
  o.ppo.value_coef = p.value_coef;
  o.ppo.entropy_coef = p.entropy;
  o.ppo.epochs = p.epochs;
  o.ppo.minibatch = p.minibatch;
  o.ppo.hidden = p.hidden;
  o.ppo.seed = p.seed;
  o.rollout = p.rollout;
  o.learn = p.learn;
  o.alpha_min = p.accumulation_min;
  o.alpha_max = p.accumulation_max;
  o.policy_in = p.policy_in;
  o.policy_out = p.policy_out;
  o.job_scope = p.scope != "worker";
  return o;
}

StepModel StepModelOf(const OptimizerConfig& o) {
  return o.name == "adam" && o.lr_scaling == "none" ? StepModel::kFixedAdamStep
                                                    : StepModel::kScaledLr;
}

void CheckPpo(const PolicyConfig& p) {
  if (p.accumulation_min < 1 || p.accumulation_max < p.accumulation_min) {
    throw std::invalid_argument("--accumulation_min must be >= 1 and <= --accumulation_max");
  }
  if (p.rollout < 1) throw std::invalid_argument("--ppo_rollout must be >= 1");
  if (!p.policy_in.empty() && !std::ifstream(p.policy_in)) {
    throw std::invalid_argument("cannot open --ppo_policy_in " + p.policy_in +
                                " (--ppo_policy_in none starts from scratch)");
  }
  LivePolicyOptionsOf(p).ppo.Validate();
}

std::unique_ptr<AccumulationPolicy> MakePolicy(const PolicyConfig& p, StepModel step_model,
                                               int workers, int64_t accumulation) {
  if (p.name == "fixed") return nullptr;
  if (p.name == "speed") {
    return MakeSpeedPolicy(workers, accumulation, p.accumulation_min, p.accumulation_max);
  }
  if (p.name == "goodput") {
    return MakeGoodputPolicy(workers, accumulation, p.accumulation_min, p.accumulation_max,
                             step_model);
  }
  CheckPpo(p);
  ppo::LivePolicyOptions o = LivePolicyOptionsOf(p);
  o.step_model = step_model;
  return ppo::MakePpoPolicy(o, workers, accumulation);
}

}  // namespace tteps::scheduler
