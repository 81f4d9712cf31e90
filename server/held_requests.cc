#include "server/held_requests.h"

#include <utility>

namespace tteps::server {

bool HeldRequests::Hold(Message& m) {
  size_t bytes = 0;
  for (const auto& p : m.payloads) bytes += p.size();
  if (messages_.size() >= max_messages_ || bytes_ + bytes > max_bytes_) return false;
  bytes_ += bytes;
  messages_.push_back(std::move(m));
  return true;
}

std::vector<Message> HeldRequests::Take() {
  std::vector<Message> taken;
  taken.swap(messages_);
  bytes_ = 0;
  return taken;
}

}  // namespace tteps::server
