#include "server/server_flags.h"

DEFINE_string(optimizer, "adam", "adam, sgd or momentum");
DEFINE_double(lr, 1e-3, "learning rate");
DEFINE_double(momentum, 0.9, "momentum for --optimizer=momentum");
DEFINE_int64(
    staleness, 2,
    "ssp mode: a worker at clock c may pull once every worker's clock is >= c - staleness");

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
