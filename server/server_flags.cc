#include "server/server_flags.h"

DEFINE_string(optimizer, "adam", "adam, sgd or momentum");
DEFINE_double(lr, 1e-3, "learning rate");
DEFINE_double(momentum, 0.9, "momentum for --optimizer=momentum");
DEFINE_int64(
    staleness, 2,
    "ssp mode: a worker at clock c may pull once every worker's clock is >= c - staleness");

DEFINE_double(clip_norm, 0,
              "clip the gradient of each step to this global L2 norm (0: off). sync: the norm "
              "of the aggregate, gathered from every shard through the scheduler; async / ssp: "
              "the norm of each push, computed by its worker");
DEFINE_int64(checkpoint_every, 0,
             "each server writes a checkpoint of its shard every this many versions (0: never)");
DEFINE_string(checkpoint_dir, "", "where checkpoints go (default: <out_dir>/checkpoints)");
DEFINE_string(resume, "",
              "resume from the newest checkpoint in this directory that every server has "
              "written: values, optimizer state, version and worker clocks");

namespace tteps::server {

OptimizerConfig OptimizerConfigFromFlags() {
  OptimizerConfig c;
  c.name = FLAGS_optimizer;
  c.lr = FLAGS_lr;
  c.momentum = FLAGS_momentum;
  c.Validate();
  return c;
}

}  // namespace tteps::server
