// Where a client's requests to the parameter servers go: each server's keys of a request (its
// range clipped to the request's spans), which servers are live, which of a range's replicas a
// pull reads (the first live one), and whether a range's replicas apply pushes in one order
// (async and SSP with --replicas: a push goes to the primary once its backups hold it). Pure
// logic over the cluster map; the KV client (common/kv_client.h) sends what this says.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/cluster_map.h"
#include "common/key_range.h"
#include "common/message.h"

namespace tteps {

class KeyRouting {
 public:
  explicit KeyRouting(const ClusterMap& map);

  size_t servers() const { return replicas_.size(); }
  // Per server: the keys of `spans` it holds (empty spans: its whole range).
  std::vector<std::vector<KeyRange>> PerServer(const std::vector<KeyRange>& spans) const;
  // Whether a request of `type` goes to server `s`: a live one, and for a pull the range's
  // reader.
  bool Sends(MsgType type, size_t s) const {
    return !dead_[s] && (type != MsgType::kPull || ReaderOf(s) == s);
  }
  // The first live server holding `s`'s range (SIZE_MAX: none).
  size_t ReaderOf(size_t s) const;
  bool dead(size_t s) const { return dead_[s]; }
  // The servers holding `s`'s range, `s` among them.
  const std::vector<int>& ReplicasOf(size_t s) const { return replicas_[s]; }
  // Server `s` was declared lost: nothing more goes to it. Returns its range's reader from now
  // on (SIZE_MAX: no live server holds the range). False in `fresh` if it was lost already.
  size_t Lose(size_t s, bool* fresh);
  // Whether a push (whole, not a part) to `s` waits for the range's other live replicas to
  // hold it: ordered replicas, and `s` its range's primary.
  bool PushWaitsForBackups(size_t s) const;

 private:
  std::vector<KeyRange> ranges_;
  std::vector<std::vector<int>> replicas_;  // per server: the servers holding its range
  std::vector<bool> dead_;                  // declared lost
  bool ordered_ = false;
};

}  // namespace tteps
