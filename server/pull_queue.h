// The pulls a server holds until its shard has the version they ask for. Each is answered
// then, or refused past --timeout_s counted from when the workers it waits for were last seen
// computing (common/busy_peers.h), so a long step is not taken for a silent peer.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/busy_peers.h"
#include "common/clock.h"
#include "common/transport.h"
#include "server/server_replies.h"
#include "server/shard.h"

namespace tteps::server {

struct PendingPull {
  std::string peer;
  Header header;
  Clock::time_point arrived;
};

class PullQueue {
 public:
  explicit PullQueue(double timeout_s) : timeout_s_(timeout_s) {}
  // When a worker was last seen computing. Unset: a pull waits --timeout_s from its arrival.
  void set_busy_seen(BusySeen seen) { busy_seen_ = std::move(seen); }
  void Add(std::string peer, const Header& h) {
    pending_.push_back({std::move(peer), h, Clock::now()});
  }
  // Hands the pulls `shard` can serve to `answer` (none while `hold_all`: a backup answers
  // once it leads), and those that waited too long to `refuse` with the reason, naming the
  // workers they waited for by `name`; neither is held after.
  void Serve(const Shard& shard, bool hold_all,
             const std::function<void(const PendingPull&)>& answer,
             const std::function<void(const PendingPull&, const std::string& why)>& refuse,
             const std::function<std::string(int worker)>& name);

 private:
  // Whether a worker `p` waits for was seen computing within --timeout_s of now.
  bool BlockersComputing(const Shard& shard, const PendingPull& p, Clock::time_point now) const;

  double timeout_s_;
  BusySeen busy_seen_;
  std::vector<PendingPull> pending_;
};

// Answers a pull with the values it asks for (all of the shard's, some rows, or bf16), or
// refuses it when its exact version is no longer held.
void AnswerPull(const Shard& shard, int server_id, uint64_t fingerprint, const PendingPull& p,
                ServerReplies* replies);

}  // namespace tteps::server
