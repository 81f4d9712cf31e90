#include "server/pull_queue.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "common/bf16.h"
#include "common/json_writer.h"
#include "common/key_range.h"

namespace tteps::server {

bool PullQueue::BlockersComputing(const Shard& shard, const PendingPull& p,
                                  Clock::time_point now) const {
  if (!busy_seen_) return false;
  Clock::time_point seen{};
  for (int w : shard.Blockers(p.header.sender_id, p.header.step)) {
    seen = std::max(seen, busy_seen_(w));
  }
  const auto timeout =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_));
  return now <= BusyDeadline(p.arrived, timeout, seen);
}

void PullQueue::Serve(const Shard& shard, bool hold_all,
                      const std::function<void(const PendingPull&)>& answer,
                      const std::function<void(const PendingPull&, const std::string&)>& refuse,
                      const std::function<std::string(int)>& name) {
  const auto now = Clock::now();
  for (size_t i = 0; i < pending_.size();) {
    const PendingPull& p = pending_[i];
    if (!hold_all && shard.PullReady(p.header.sender_id, p.header.step)) {
      answer(p);
    } else if (std::chrono::duration<double>(now - p.arrived).count() > timeout_s_ &&
               !BlockersComputing(shard, p, now)) {
      std::string who;
      for (int w : shard.Blockers(p.header.sender_id, p.header.step)) {
        who += (who.empty() ? "" : ", ") + name(w);
      }
      if (!shard.initialized()) who = "the initial values from worker 0";
      refuse(p, "pull for " + std::to_string(p.header.step) + " waited " + JsonNumber(timeout_s_) +
                    " s (--timeout_s) for " + (who.empty() ? "pushes" : who));
    } else {
      ++i;
      continue;
    }
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

void AnswerPull(const Shard& shard, int server_id, uint64_t fingerprint, const PendingPull& p,
                ServerReplies* replies) {
  Header h;
  h.type = MsgType::kPullReply;
  h.sender_role = Role::kServer;
  h.sender_id = server_id;
  h.request_id = p.header.request_id;
  h.step = p.header.exact ? p.header.step : shard.version();
  h.fingerprint = fingerprint;
  h.held_s = std::chrono::duration<double>(Clock::now() - p.arrived).count();
  h.stop = shard.Stopping(h.step);
  h.ranges = p.header.ranges;  // what the pull asked for, as it asked for it
  h.wire = p.header.wire;
  // Shared: a later step copies instead of overwriting.
  auto values = p.header.exact ? shard.ValuesAt(p.header.step) : shard.values();
  if (!values) {
    return replies->Error(p.peer, p.header,
                          "version " + std::to_string(p.header.step) + " is no longer held (at " +
                              std::to_string(shard.version()) + ")");
  }
  if (h.wire == WireType::kBf16) {
    auto packed = std::make_shared<std::vector<uint16_t>>(SpanKeys(h.ranges));
    GatherBf16(values->data(), shard.range().begin, h.ranges, packed->data());
    replies->Send(p.peer, p.header, h,
                  {{packed, packed->data(), packed->size(), sizeof(uint16_t)}});
  } else if (h.ranges.size() == 1 && h.ranges[0] == shard.range()) {
    replies->Send(p.peer, p.header, h, {{values, values->data(), values->size()}});
  } else {
    auto rows = std::make_shared<std::vector<float>>(SpanKeys(h.ranges));
    GatherSpans(values->data(), shard.range().begin, h.ranges, rows->data());
    replies->Send(p.peer, p.header, h, {{rows, rows->data(), rows->size()}});
  }
}

}  // namespace tteps::server
