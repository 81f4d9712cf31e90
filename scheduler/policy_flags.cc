#include "scheduler/policy_flags.h"

#include <gflags/gflags.h>

#include <fstream>
#include <stdexcept>
#include <string>

#include "scheduler/ppo/live_policy.h"
#include "worker/worker_flags.h"  // --accumulation

DEFINE_string(accumulation_policy, "fixed",
              "fixed: every worker keeps --accumulation; ppo: a PPO2 agent in the scheduler "
              "sets each worker's alpha from its training windows");
DEFINE_int64(alpha_min, 1, "ppo: the smallest alpha the agent may set");
DEFINE_int64(alpha_max, 16, "ppo: the largest alpha the agent may set");
DEFINE_string(ppo_policy_in, "", "ppo: start from this saved policy");
DEFINE_string(ppo_policy_out, "", "ppo: save the policy here when training ends");
DEFINE_bool(ppo_learn, true, "ppo: update the policy during the job (false: only act)");
DEFINE_double(ppo_lr, 3e-4, "ppo: Adam learning rate of the actor-critic");
DEFINE_double(ppo_gamma, 0.9, "ppo: discount factor");
DEFINE_double(ppo_lambda, 0.95, "ppo: GAE lambda");
DEFINE_double(ppo_clip, 0.2, "ppo: epsilon of the clipped surrogate objective");
DEFINE_double(ppo_value_coef, 0.5, "ppo: weight of the value loss");
DEFINE_double(ppo_entropy, 0.01, "ppo: weight of the entropy bonus");
DEFINE_int32(ppo_epochs, 4, "ppo: passes over each rollout");
DEFINE_int32(ppo_minibatch, 32, "ppo: transitions per gradient step");
DEFINE_int32(ppo_rollout, 32, "ppo: decisions per update");
DEFINE_int32(ppo_hidden, 64, "ppo: width of the two hidden layers");
DEFINE_uint64(ppo_seed, 1, "ppo: seed of the network and of action sampling");

namespace tteps::scheduler {

ppo::LivePolicyOptions PolicyOptionsFromFlags() {
  ppo::LivePolicyOptions o;
  o.ppo.lr = FLAGS_ppo_lr;
  o.ppo.gamma = FLAGS_ppo_gamma;
  o.ppo.lambda = FLAGS_ppo_lambda;
  o.ppo.clip = FLAGS_ppo_clip;
  o.ppo.value_coef = FLAGS_ppo_value_coef;
  o.ppo.entropy_coef = FLAGS_ppo_entropy;
  o.ppo.epochs = FLAGS_ppo_epochs;
  o.ppo.minibatch = FLAGS_ppo_minibatch;
  o.ppo.hidden = FLAGS_ppo_hidden;
  o.ppo.seed = FLAGS_ppo_seed;
  o.rollout = FLAGS_ppo_rollout;
  o.learn = FLAGS_ppo_learn;
  o.alpha_min = FLAGS_alpha_min;
  o.alpha_max = FLAGS_alpha_max;
  o.policy_in = FLAGS_ppo_policy_in;
  o.policy_out = FLAGS_ppo_policy_out;
  return o;
}

void CheckPolicyFlags() {
  if (FLAGS_accumulation_policy != "fixed" && FLAGS_accumulation_policy != "ppo") {
    throw std::invalid_argument("--accumulation_policy must be fixed or ppo, not '" +
                                FLAGS_accumulation_policy + "'");
  }
  if (FLAGS_accumulation < 1) throw std::invalid_argument("--accumulation must be >= 1");
  if (FLAGS_accumulation_policy == "fixed") return;
  CheckPpoFlags();
  if (FLAGS_accumulation < FLAGS_alpha_min || FLAGS_accumulation > FLAGS_alpha_max) {
    throw std::invalid_argument(
        "--accumulation (the starting alpha) must lie in [--alpha_min, "
        "--alpha_max]");
  }
}

void CheckPpoFlags() {
  if (FLAGS_alpha_min < 1 || FLAGS_alpha_max < FLAGS_alpha_min) {
    throw std::invalid_argument("--alpha_min must be >= 1 and <= --alpha_max");
  }
  if (FLAGS_ppo_rollout < 1) throw std::invalid_argument("--ppo_rollout must be >= 1");
  if (!FLAGS_ppo_policy_in.empty() && !std::ifstream(FLAGS_ppo_policy_in)) {
    throw std::invalid_argument("cannot open --ppo_policy_in " + FLAGS_ppo_policy_in);
  }
  PolicyOptionsFromFlags().ppo.Validate();
}

std::unique_ptr<AccumulationPolicy> MakePolicyFromFlags() {
  CheckPolicyFlags();
  if (FLAGS_accumulation_policy == "fixed") return nullptr;
  return ppo::MakePpoPolicy(PolicyOptionsFromFlags());
}

}  // namespace tteps::scheduler
