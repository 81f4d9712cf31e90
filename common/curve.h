// ZeroMQ CURVE for every socket of a process: authentication and encryption. A key directory
// (tteps-keygen) holds the cluster's key pair and the public keys allowed to connect. Every
// process of a job loads it; sockets that bind (ROUTER) act as CURVE servers with the cluster
// key, sockets that connect (DEALER) as clients. A ZAP handler on the context admits only the
// authorized public keys, and logs and counts every refusal with the peer's address.
#pragma once

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <zmq.hpp>

namespace tteps {

struct CurveKeys {
  std::string public_key, secret_key;  // Z85 text, 40 characters each
  std::set<std::string> authorized;    // Z85 public keys allowed to connect
};

// Writes DIR/cluster.key (the pair; mode 0600), DIR/cluster.pub and DIR/authorized_keys (the
// cluster's public key; add one line per further client key). Refuses to overwrite a key.
void GenerateCurveKeys(const std::string& dir);

// Reads a key directory; throws std::runtime_error naming the file and what is wrong (missing,
// malformed, or a secret readable by group or others).
CurveKeys LoadCurveKeys(const std::string& dir);

// Turns CURVE on for every socket that MakeSocket creates on `ctx` while this object lives, and
// answers the context's ZAP requests. Create it right after the context and before any socket,
// and let it die before the context.
class CurveSecurity {
 public:
  CurveSecurity(zmq::context_t& ctx, CurveKeys keys);
  ~CurveSecurity();
  CurveSecurity(const CurveSecurity&) = delete;
  CurveSecurity& operator=(const CurveSecurity&) = delete;

  // Connection attempts refused so far (an unknown public key; a client without CURVE fails
  // its handshake before it reaches this handler and is not counted).
  int64_t refused() const { return refused_; }
  // Applies the keys to a new socket: server for ROUTER, client for the other types.
  void Apply(zmq::socket_t& socket, zmq::socket_type type) const;

 private:
  void Serve();
  void ServeRequests();

  zmq::context_t& ctx_;
  CurveKeys keys_;
  zmq::socket_t zap_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> refused_{0};
  std::thread thread_;
};

// The CurveSecurity that governs `ctx`, or null (plain sockets). Used by MakeSocket.
const CurveSecurity* SecurityOf(const zmq::context_t& ctx);

// null when `dir` is empty (CURVE off), else CURVE on `ctx` with the keys in `dir`.
std::unique_ptr<CurveSecurity> SecureContext(zmq::context_t& ctx, const std::string& dir);

}  // namespace tteps
