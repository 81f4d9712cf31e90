// The first stage of a server's request: whether it may be served at all. Each check names
// what is wrong, so that the sender's refusal says it; nothing here changes the shard.
#pragma once

#include <cstdint>
#include <string>

#include "common/cluster_map.h"
#include "common/key_range.h"
#include "common/transport.h"

namespace tteps::server {

// Why a data request cannot be served by the server of `range` in `map` (its epoch, layout,
// step or keys); empty: it can.
std::string RequestProblem(const Header& h, const ClusterMap& map, const KeyRange& range);
// Why a push's trips, norm or gradient noise are impossible; empty: they are not.
std::string PushProblem(const Header& h, int64_t max_push_trips);
// Why `values` (the message's, one per key of its spans) would poison the model: the first NaN
// or infinity and its key; empty: none.
std::string NonFiniteProblem(const Header& h, const float* values, const char* what);

}  // namespace tteps::server
