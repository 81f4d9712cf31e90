// Flags of the parameter servers' update rule, shared by every program that describes it
// (tteps-server applies it; the scheduler sends it to all; local workers use the same names).
#pragma once

#include <gflags/gflags.h>

#include <cstdint>

#include "server/optimizer.h"

DECLARE_string(optimizer);
DECLARE_double(lr);
DECLARE_double(momentum);
DECLARE_int64(staleness);
DECLARE_int64(checkpoint_every);
DECLARE_double(clip_norm);
DECLARE_string(checkpoint_dir);
DECLARE_string(resume);

namespace tteps::server {

OptimizerConfig OptimizerConfigFromFlags();

}  // namespace tteps::server
