// What a server sends back: acknowledgements, errors (counted, and logged as LogThisRefusal
// allows), and any reply ZeroMQ could not queue (counted: the peer vanished or does not read).
#pragma once

#include <cstdint>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "common/message.h"
#include "common/transport.h"

namespace tteps::server {

class ServerReplies {
 public:
  ServerReplies(zmq::socket_t& socket, int id) : socket_(socket), id_(id) {}
  // Refuses `request` saying why; nothing is sent where `peer` is empty (it reads no replies).
  void Error(const std::string& peer, const Header& request, const std::string& what);
  // Acknowledges `request` with `type`, naming the shard's `version`.
  void Ack(const std::string& peer, const Header& request, MsgType type, int64_t version);
  // Sends `reply` with `payloads`, answering `request`.
  void Send(const std::string& peer, const Header& request, const Header& reply,
            const std::vector<Payload>& payloads);
  int64_t errors() const { return errors_; }

 private:
  void NoteDropped(const Header& request);

  zmq::socket_t& socket_;
  int id_;
  int64_t errors_ = 0, dropped_ = 0;
};

}  // namespace tteps::server
