#include "server/server_replies.h"

#include <glog/logging.h>

#include "common/log_file.h"

namespace tteps::server {

void ServerReplies::Error(const std::string& peer, const Header& request, const std::string& what) {
  ++errors_;
  LOG_IF(ERROR, LogThisRefusal(errors_))
      << "server " << id_ << ": rejected " << TypeName(request.type) << " from "
      << RoleName(request.sender_role) << " " << request.sender_id << ": " << what << " ("
      << errors_ << " refused so far)";
  if (peer.empty()) return;
  Header h;
  h.type = MsgType::kError;
  h.sender_role = Role::kServer;
  h.sender_id = id_;
  h.request_id = request.request_id;
  h.text = what;
  SendMessage(socket_, h, {}, peer);
}

void ServerReplies::Ack(const std::string& peer, const Header& request, MsgType type,
                        int64_t version) {
  Header h;
  h.type = type;
  h.sender_role = Role::kServer;
  h.sender_id = id_;
  h.request_id = request.request_id;
  h.step = version;
  if (!SendMessage(socket_, h, {}, peer)) NoteDropped(request);
}

void ServerReplies::Send(const std::string& peer, const Header& request, const Header& reply,
                         const std::vector<Payload>& payloads) {
  if (!SendMessage(socket_, reply, payloads, peer)) NoteDropped(request);
}

void ServerReplies::NoteDropped(const Header& request) {
  ++dropped_;
  LOG_IF(WARNING, LogThisRefusal(dropped_))
      << "server " << id_ << ": reply to " << TypeName(request.type) << " of "
      << RoleName(request.sender_role) << " " << request.sender_id
      << " dropped: the peer is gone or does not read (" << dropped_ << " so far)";
}

}  // namespace tteps::server
