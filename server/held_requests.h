// Requests a server keeps until an event (its rollback, a step's global norm or last push, the
// scheduler's word of a join), bounded so that a foreign sender cannot grow the server without
// limit.
#pragma once

#include <cstddef>
#include <vector>

#include "common/transport.h"

namespace tteps::server {

class HeldRequests {
 public:
  // At most `max_messages` messages of `max_bytes` payload bytes in all.
  HeldRequests(size_t max_messages, size_t max_bytes)
      : max_messages_(max_messages), max_bytes_(max_bytes) {}
  // Keeps `m`; false, leaving it, when the bound is reached.
  bool Hold(Message& m);
  // Every message held, in arrival order; none are held after.
  std::vector<Message> Take();
  bool empty() const { return messages_.empty(); }

 private:
  size_t max_messages_, max_bytes_;
  std::vector<Message> messages_;
  size_t bytes_ = 0;
};

}  // namespace tteps::server
