// A server's statistics at the end of a job: the typed report it sends the scheduler, which
// puts them (as JSON) into summary.json. LibTorch-free.
#pragma once

#include <cereal/cereal.hpp>
#include <cereal/types/map.hpp>
#include <cstdint>
#include <map>
#include <string>

#include "common/json_writer.h"

namespace tteps::server {

struct ServerStats {
  int32_t server = 0;
  int64_t pushes = 0, pulls = 0, errors = 0, version = 0;
  int64_t non_finite = 0;  // refused pushes and inits holding a NaN or infinity (in errors too)
  int64_t unauthenticated = 0;  // connections refused by CURVE (an unknown key)
  double peak_rss_mb = 0;
  double peak_private_mb = 0, peak_shared_mb = 0;  // common/peak_memory.h
  std::map<int64_t, int64_t> staleness;            // staleness of a push -> pushes
  // A hash of the shard's range, version, values and optimizer state: replicas of a range
  // (--replicas) end with equal hashes when they are bit-identical.
  uint64_t state_hash = 0;
  // --lr_scaling adascale: the gains of the rate over the steps (gain_steps 0: none).
  int64_t gain_steps = 0;
  double gain_mean = 0, gain_min = 0, gain_max = 0, gain_last = 0;

  // {"server", "pushes", "pulls", "errors", "non_finite", "version", "peak_rss_mb", "staleness":
  // {"mean", "p50", "p90", "p99", "max", "histogram"}, "state_hash": 16 hex digits, and with
  // AdaScale "lr_gain": {"steps", "mean", "min", "max", "last"}}
  JsonObject ToJson() const;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(server, pushes, pulls, errors, version, non_finite, unauthenticated, peak_rss_mb, staleness,
       state_hash, gain_steps, gain_mean, gain_min, gain_max, gain_last, peak_private_mb,
       peak_shared_mb);
  }
};

// "0123456789abcdef": 16 hex digits (JSON numbers lose a uint64's low bits in many readers).
std::string HexHash(uint64_t hash);

}  // namespace tteps::server
