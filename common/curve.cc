#include "common/curve.h"

#include <fcntl.h>
#include <glog/logging.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "common/log_file.h"
#include "common/transport.h"

namespace tteps {
namespace {

constexpr char kZapEndpoint[] = "inproc://zeromq.zap.01";  // fixed by the ZAP protocol (RFC 27)

std::mutex& RegistryMutex() {
  static std::mutex* m = new std::mutex();
  return *m;
}
std::map<const void*, const CurveSecurity*>& Registry() {
  static auto* r = new std::map<const void*, const CurveSecurity*>();
  return *r;
}

bool IsZ85Key(const std::string& s) {
  uint8_t bin[32];
  return s.size() == 40 && zmq_z85_decode(bin, s.c_str()) != nullptr;
}

std::string Z85(const uint8_t* key32) {
  char text[41] = {0};
  zmq_z85_encode(text, key32, 32);
  return text;
}

// The lines of `path` that are neither empty nor comments, trimmed.
std::vector<std::string> KeyLines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path + " (make keys with tteps-keygen DIR)");
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    const size_t b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#') continue;
    out.push_back(line.substr(b, e - b + 1));
  }
  return out;
}

// Creates `path` with `mode` (O_EXCL: never over an existing file, and never readable by
// others in between), and writes `text`.
void WriteNew(const std::string& path, const std::string& text, mode_t mode) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, mode);
  if (fd < 0) {
    throw std::runtime_error(path + (errno == EEXIST
                                         ? " exists: tteps-keygen never overwrites a key"
                                         : ": cannot create it"));
  }
  const bool ok = fchmod(fd, mode) == 0 &&  // whatever the umask
                  write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!ok) throw std::runtime_error("cannot write " + path);
}

}  // namespace

void GenerateCurveKeys(const std::string& dir) {
  std::filesystem::create_directories(dir);
  char pub[41] = {0}, sec[41] = {0};
  if (zmq_curve_keypair(pub, sec) != 0) {
    throw std::runtime_error("this ZeroMQ was built without CURVE (libsodium)");
  }
  WriteNew(dir + "/cluster.key",
           std::string("# tteps cluster key pair: public, then secret. Keep it mode 0600.\n") +
               pub + "\n" + sec + "\n",
           0600);
  WriteNew(dir + "/cluster.pub", std::string(pub) + "\n", 0644);
  WriteNew(dir + "/authorized_keys",
           std::string("# Public keys (Z85) allowed to connect, one per line.\n") + pub + "\n",
           0644);
}

CurveKeys LoadCurveKeys(const std::string& dir) {
  if (!zmq_has("curve")) throw std::runtime_error("this ZeroMQ was built without CURVE");
  const std::string key_path = dir + "/cluster.key";
  struct stat st {};
  if (stat(key_path.c_str(), &st) != 0) {
    throw std::runtime_error("cannot read " + key_path + " (make keys with tteps-keygen DIR)");
  }
  if (st.st_mode & (S_IRWXG | S_IRWXO)) {
    std::ostringstream mode;
    mode << std::oct << (st.st_mode & 0777);
    throw std::runtime_error(key_path + " is open to group or others (mode 0" + mode.str() +
                             "): chmod 600 it");
  }
  const auto pair = KeyLines(key_path);
  if (pair.size() != 2 || !IsZ85Key(pair[0]) || !IsZ85Key(pair[1])) {
    throw std::runtime_error(key_path +
                             ": expected two Z85 keys of 40 characters (public, secret)");
  }
  CurveKeys k;
  k.public_key = pair[0];
  k.secret_key = pair[1];
  char derived[41] = {0};
  if (zmq_curve_public(derived, k.secret_key.c_str()) != 0 || k.public_key != derived) {
    throw std::runtime_error(key_path + ": the public key does not belong to the secret key");
  }
  const std::string list = dir + "/authorized_keys";
  const auto lines = KeyLines(list);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!IsZ85Key(lines[i])) {
      throw std::runtime_error(list + ": entry " + std::to_string(i + 1) +
                               " is not a Z85 public key of 40 characters");
    }
    k.authorized.insert(lines[i]);
  }
  if (!k.authorized.count(k.public_key)) {
    throw std::runtime_error(list +
                             " lacks the cluster's own public key: the job's nodes could "
                             "not reach each other");
  }
  return k;
}

CurveSecurity::CurveSecurity(zmq::context_t& ctx, CurveKeys keys)
    : ctx_(ctx), keys_(std::move(keys)), zap_(ctx, zmq::socket_type::rep) {
  zap_.set(zmq::sockopt::linger, 0);
  zap_.bind(kZapEndpoint);
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    if (!Registry().emplace(ctx_.handle(), this).second) {
      throw std::logic_error("a ZeroMQ context secured twice");
    }
  }
  thread_ = std::thread([this] { Serve(); });
}

CurveSecurity::~CurveSecurity() {
  stop_ = true;
  thread_.join();
  zap_.close();
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry().erase(ctx_.handle());
}

void CurveSecurity::Apply(zmq::socket_t& socket, zmq::socket_type type) const {
  if (type == zmq::socket_type::router) {
    socket.set(zmq::sockopt::curve_server, 1);
    socket.set(zmq::sockopt::curve_secretkey, keys_.secret_key);
    socket.set(zmq::sockopt::zap_domain, "tteps");
  } else {
    socket.set(zmq::sockopt::curve_serverkey, keys_.public_key);
    socket.set(zmq::sockopt::curve_publickey, keys_.public_key);
    socket.set(zmq::sockopt::curve_secretkey, keys_.secret_key);
  }
}

// RFC 27: request = version, request id, domain, address, routing id, mechanism, credentials
// (for CURVE the client's 32-byte public key); reply = version, request id, status code, status
// text, user id, metadata.
void CurveSecurity::Serve() {
  try {
    ServeRequests();
  } catch (const std::exception& e) {
    // Fails closed: handshakes then wait for an answer that never comes, and time out.
    LOG(ERROR) << "the CURVE authentication thread stopped: " << e.what();
  }
}

void CurveSecurity::ServeRequests() {
  while (!stop_) {
    zmq::pollitem_t item{zap_.handle(), 0, ZMQ_POLLIN, 0};
    if (Poll(&item, 1, 100) <= 0) continue;
    std::vector<zmq::message_t> frames;
    do {
      frames.emplace_back();
      if (!zap_.recv(frames.back())) break;
    } while (frames.back().more());
    auto text = [&](size_t i) { return i < frames.size() ? frames[i].to_string() : ""; };
    std::string status = "400", reason, client;
    if (text(5) == "CURVE" && frames.size() >= 7 && frames[6].size() == 32) {
      client = Z85(frames[6].data<uint8_t>());
      if (keys_.authorized.count(client)) {
        status = "200";
        reason = "OK";
      } else {
        reason = "public key " + client + " is not in authorized_keys";
      }
    } else {
      reason = "mechanism " + text(5) + ", not CURVE";
    }
    if (status != "200") {
      const int64_t refused = ++refused_;
      LOG_IF(ERROR, LogThisRefusal(refused)) << "refused a connection from " << text(3) << ": "
                                             << reason << " (" << refused << " refused so far)";
    }
    const std::vector<std::string> reply = {"1.0", text(1), status, reason, client, ""};
    for (size_t i = 0; i < reply.size(); ++i) {
      zap_.send(zmq::buffer(reply[i]),
                i + 1 < reply.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
  }
}

const CurveSecurity* SecurityOf(const zmq::context_t& ctx) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  auto it = Registry().find(const_cast<zmq::context_t&>(ctx).handle());
  return it == Registry().end() ? nullptr : it->second;
}

std::unique_ptr<CurveSecurity> SecureContext(zmq::context_t& ctx, const std::string& dir) {
  if (dir.empty()) return nullptr;
  return std::make_unique<CurveSecurity>(ctx, LoadCurveKeys(dir));
}

}  // namespace tteps
