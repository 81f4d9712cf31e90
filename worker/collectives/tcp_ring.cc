#include "worker/collectives/tcp_ring.h"

#include <glog/logging.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "common/log_file.h"
#include "common/transport.h"

namespace tteps::collectives {

namespace {

constexpr uint32_t kMagic = 0x52494e47;  // "RING"
constexpr int kLingerMs = 5000;

// The frame before each payload.
struct WireHeader {
  uint32_t magic = kMagic;
  uint32_t generation = 0;
  int32_t sender = -1;
  uint32_t reserved = 0;
};

}  // namespace

class TcpLinks : public RingLinks {
 public:
  TcpLinks(TcpRing* ring, RingMembers members, int position)
      : ring_(ring),
        members_(std::move(members)),
        position_(position),
        right_(MakeSocket(ring->ctx_, zmq::socket_type::dealer)) {
    right_.set(zmq::sockopt::sndhwm, 0);  // a round's sends are bounded; never block on them
    // A send is complete once queued: closing must still deliver it (the last round of a job
    // ends with sends the neighbour waits for), but not forever.
    right_.set(zmq::sockopt::linger, kLingerMs);
    const int size = static_cast<int>(members_.ids.size());
    right_.connect(members_.endpoints[(position_ + 1) % size]);
  }

  ~TcpLinks() override {
    if (abandoned_) right_.set(zmq::sockopt::linger, 0);  // nobody waits for a failed round
  }

  int rank() const override { return position_; }
  int size() const override { return static_cast<int>(members_.ids.size()); }
  int PeerId(int position) const override {
    return position >= 0 && position < size() ? members_.ids[position] : position;
  }
  std::string name() const override { return "tcp"; }

  void PostSend(const float* data, size_t n) override {
    CheckUsable();
    WireHeader h;
    h.generation = members_.generation;
    h.sender = members_.ids[position_];
    right_.send(zmq::buffer(&h, sizeof(h)), zmq::send_flags::sndmore);
    // Copied: the caller may reuse the buffer once the round ends, before TCP has sent it.
    right_.send(zmq::message_t(data, n * sizeof(float)), zmq::send_flags::none);
    sent_.push_back(sends_++);
  }

  void PostRecv(float* into, size_t n) override {
    CheckUsable();
    posted_.push_back({into, n, recvs_++});
  }

  std::optional<LinkEvent> Poll() override {
    if (!sent_.empty()) {
      const size_t index = sent_.front();
      sent_.pop_front();
      return LinkEvent{false, index};
    }
    if (posted_.empty()) return std::nullopt;
    auto& inbox = ring_->Inbox();
    if (inbox.empty()) ring_->Receive();
    if (inbox.empty()) return std::nullopt;
    const Posted p = posted_.front();
    posted_.pop_front();
    zmq::message_t m = std::move(inbox.front());
    inbox.pop_front();
    if (m.size() != p.n * sizeof(float)) {
      throw std::runtime_error("ring message " + std::to_string(p.index) + " from worker " +
                               std::to_string(ring_->left_) + " holds " + std::to_string(m.size()) +
                               " bytes, " + std::to_string(p.n * sizeof(float)) + " expected");
    }
    std::memcpy(p.into, m.data(), m.size());
    return LinkEvent{true, p.index};
  }

  void EndRound(bool abandon) override {
    if (abandon) abandoned_ = true;  // messages of the round may still come: the ring is spent
    sent_.clear();
    posted_.clear();
    sends_ = recvs_ = 0;
  }

 private:
  struct Posted {
    float* into;
    size_t n;
    size_t index;
  };
  void CheckUsable() const {
    if (abandoned_) {
      throw std::logic_error("ring links of generation " + std::to_string(members_.generation) +
                             " were abandoned; a new ring must be built");
    }
  }

  TcpRing* ring_;
  RingMembers members_;
  int position_;
  zmq::socket_t right_;
  std::deque<size_t> sent_;
  std::deque<Posted> posted_;
  size_t sends_ = 0, recvs_ = 0;
  bool abandoned_ = false;
};

TcpRing::TcpRing(zmq::context_t& ctx, const std::string& bind_host,
                 const std::string& advertise_host, size_t max_bytes)
    : ctx_(ctx), socket_(MakeSocket(ctx, zmq::socket_type::router)), max_bytes_(max_bytes) {
  socket_.set(zmq::sockopt::rcvhwm, 0);
  socket_.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(max_bytes_) + 64);
  endpoint_ = BindTcp(socket_, bind_host, advertise_host);
}

TcpRing::~TcpRing() = default;

std::unique_ptr<RingLinks> TcpRing::Links(const RingMembers& members, int self) {
  self_ = self;
  const auto it = std::find(members.ids.begin(), members.ids.end(), self_);
  if (it == members.ids.end() || members.endpoints.size() != members.ids.size()) {
    throw std::invalid_argument("worker " + std::to_string(self_) + " is not in ring generation " +
                                std::to_string(members.generation));
  }
  if (started_ && members.generation <= generation_) {
    throw std::invalid_argument("ring generation " + std::to_string(members.generation) +
                                " follows " + std::to_string(generation_));
  }
  started_ = true;
  generation_ = members.generation;
  inbox_.erase(inbox_.begin(), inbox_.lower_bound(generation_));  // an older ring's leftovers
  const int size = static_cast<int>(members.ids.size());
  const int position = static_cast<int>(it - members.ids.begin());
  left_ = members.ids[(position + size - 1) % size];
  return std::make_unique<TcpLinks>(this, members, position);
}

void TcpRing::Receive() {
  for (;;) {
    std::vector<zmq::message_t> frames;
    zmq::message_t frame;
    if (!socket_.recv(frame, zmq::recv_flags::dontwait)) return;
    frames.push_back(std::move(frame));
    while (frames.back().more()) {
      zmq::message_t next;
      (void)socket_.recv(next, zmq::recv_flags::none);  // the rest of a message is there
      frames.push_back(std::move(next));
    }
    // [sender's routing id][header][payload]
    WireHeader h;
    std::string why;
    if (frames.size() != 3 || frames[1].size() != sizeof(WireHeader)) {
      why = "not a ring message (" + std::to_string(frames.size()) + " frames)";
    } else {
      std::memcpy(&h, frames[1].data(), sizeof(h));
      if (h.magic != kMagic) {
        why = "not a ring message (magic)";
      } else if (h.generation < generation_) {
        continue;  // an older ring's, sent before its sender heard of the change: expected
      } else if (h.generation == generation_ && h.sender != left_) {
        why = "from worker " + std::to_string(h.sender) + ", not the left neighbour " +
              std::to_string(left_);
      }
    }
    if (!why.empty()) {
      ++dropped_;
      LOG_IF(ERROR, LogThisRefusal(dropped_))
          << "ring of worker " << self_ << ": dropped a message: " << why << " (" << dropped_
          << " so far)";
      continue;
    }
    inbox_[h.generation].push_back(std::move(frames[2]));
  }
}

}  // namespace tteps::collectives
