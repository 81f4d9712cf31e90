#include "scheduler/policy_flags.h"

#include <gflags/gflags.h>

#include "common/shipped_files.h"

DEFINE_string(accumulation_policy, "fixed",
              "fixed: every worker keeps --accumulation; speed (LB-BSP): each worker's "
              "accumulation in proportion to its measured speed, the sum over the workers kept; "
              "goodput (Pollux): the global batch of highest throughput x statistical "
              "efficiency (from the measured gradient noise scale), split as speed splits it; "
              "ppo: a PPO2 agent in the scheduler sets the global batch, split as speed splits "
              "it (--ppo_scope job), or each worker's accumulation (--ppo_scope worker)");
DEFINE_string(ppo_scope, "job",
              "ppo: job (the agent halves, keeps or doubles the global batch from the job's "
              "windows; the speed split allocates it) or worker (the agent sets each worker's "
              "accumulation from that worker's windows)");
DEFINE_int64(accumulation_min, 1,
             "ppo, speed, goodput: the smallest accumulation the policy may set");
DEFINE_int64(accumulation_max, 16,
             "ppo, speed, goodput: the largest accumulation the policy may set");
DEFINE_string(ppo_policy_in, "shipped",
              "ppo: start from this saved policy; shipped: the one in the repository for the "
              "scope (scheduler/ppo/shipped_policy.pt for job, shipped_worker_policy.pt for "
              "worker; pre-trained on simulated jobs, see docs/policies.md); none: from scratch");
DEFINE_string(ppo_policy_out, "", "ppo: save the policy here when training ends");
DEFINE_bool(ppo_learn, false,
            "ppo: update the policy during the job, sampling its actions to explore (false: "
            "only act, on the most likely action); unless given, true from scratch "
            "(--ppo_policy_in none) and false with a loaded policy, the shipped one included");
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

PolicyConfig PolicyConfigFromFlags() {
  PolicyConfig p;
  p.name = FLAGS_accumulation_policy;
  p.scope = FLAGS_ppo_scope;
  p.accumulation_min = FLAGS_accumulation_min;
  p.accumulation_max = FLAGS_accumulation_max;
  const std::string shipped =
      ShippedFile(p.scope == "worker" ? kShippedWorkerPolicy : kShippedPolicy);
  p.policy_in = FLAGS_ppo_policy_in == "none"      ? ""
                : FLAGS_ppo_policy_in == "shipped" ? shipped
                                                   : FLAGS_ppo_policy_in;
  p.policy_out = FLAGS_ppo_policy_out;
  // A pre-trained policy acts as trained: exploring costs a live job more than it teaches
  // (docs/policies.md, "the learning agent samples its actions"); one from scratch can only learn.
  p.learn = gflags::GetCommandLineFlagInfoOrDie("ppo_learn").is_default ? p.policy_in.empty()
                                                                        : FLAGS_ppo_learn;
  p.rollout = FLAGS_ppo_rollout;
  p.hidden = FLAGS_ppo_hidden;
  p.epochs = FLAGS_ppo_epochs;
  p.minibatch = FLAGS_ppo_minibatch;
  p.lr = FLAGS_ppo_lr;
  p.gamma = FLAGS_ppo_gamma;
  p.lambda = FLAGS_ppo_lambda;
  p.clip = FLAGS_ppo_clip;
  p.value_coef = FLAGS_ppo_value_coef;
  p.entropy = FLAGS_ppo_entropy;
  p.seed = FLAGS_ppo_seed;
  return p;
}

}  // namespace tteps::scheduler
