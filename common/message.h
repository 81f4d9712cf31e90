// The wire format: one ZeroMQ multipart message per request. Frame 0 is a Header encoded with
// Cereal; data messages (init, push, pull reply) carry one more frame: the float32 values of the
// header's key ranges back to back, read in place. A dense message names one range (a server's
// whole shard); a sparse one names the spans it holds (the rows of embedding tables a step used).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/file_formats.h"  // kProtocolVersion
#include "common/key_range.h"

namespace tteps {

inline constexpr uint32_t kMagic = 0x54544550;  // "TTEP"

enum class Role : uint8_t { kScheduler = 0, kServer = 1, kWorker = 2 };
const char* RoleName(Role role);

enum class MsgType : uint8_t {
  kError = 0,   // text: what went wrong (with the request `request_id`, or on the sender)
  kRegister,    // node -> scheduler; body: NodeInfo
  kClusterMap,  // scheduler -> node; body: ClusterMap
  kInit,        // worker 0 -> server: initial values for the ranges (payloads)
  kInitAck,
  kPush,  // worker -> server: gradient sums for the ranges, `samples` trips, computed
          // on version `step`
  kPushAck,
  kPull,       // worker -> server: values of the ranges once version >= `step` (sync) or
               // the worker's clock allows it (SSP)
  kPullReply,  // server -> worker: payloads; `step` = version served
  kHeartbeat,  // node -> scheduler, and the answer
  kShutdown,   // scheduler -> node: exit; text non-empty means the job failed
  kTrace,      // node -> scheduler; text: timeline events (common/trace.h) for --trace
  // The roles' own control messages, named by `topic`: text holds the topic's typed body
  // (common/topic.h; common/topics/worker_topics.h, common/topics/server_topics.h), payloads what
  // the topic defines.
  kCommand,  // scheduler -> node
  kReport,   // node -> scheduler
  // server -> server (async / SSP with --replicas, server/push_order.h): the push a range's
  // primary applied next; text: its OrderEntry.
  kOrder,
  kTypeCount  // not a type: the number of types
};
const char* TypeName(MsgType type);

// How a data message's values travel (--wire_dtype): float32, or bfloat16 (common/bf16.h).
enum class WireType : uint8_t { kF32 = 0, kBf16 = 1 };
inline size_t WireBytes(WireType t) { return t == WireType::kBf16 ? 2 : 4; }

struct Header {
  // The magic and the version come first in every protocol version, past and future: a process
  // of another release is named by its version, not refused as garbage.
  uint32_t magic = kMagic;
  uint16_t version = kProtocolVersion;
  MsgType type = MsgType::kError;
  Role sender_role = Role::kWorker;
  int32_t sender_id = -1;   // worker or server index (0-based); -1 for the scheduler
  uint64_t request_id = 0;  // echoed in the reply
  // Data messages: the version a push was computed on, a pull waits for (sync) or a reply
  // serves; acknowledgements: the server's version.
  int64_t step = 0;
  int64_t samples = 0;       // push: the trips behind it
  uint64_t fingerprint = 0;  // parameter layout fingerprint (push, pull, init)
  double held_s = 0;         // pull replies: how long the server held the pull before answering
  double norm = -1;          // push: norm of the mean gradient
  // push: this worker was told to stop (kStop); pull reply: training ends with this version
  bool stop = false;
  // Data messages: the values' type; a pull asks for its reply's.
  WireType wire = WireType::kF32;
  // sync push: a part sent during backward; the push whose `more` is false completes it.
  bool more = false;
  // sync push: the slice of the global batch it holds (the worker id of the slice's first
  // owner), when a worker pushes a lost worker's slice as well as its own; -1: the sender's.
  int32_t slice = -1;
  // sync pull: the values of version `step` exactly, also when the server is one version on
  // (it keeps the previous one): a lost worker's slice recomputed for a step that some servers
  // completed and others did not (its push reached only some of them).
  bool exact = false;
  // Data messages: the cluster map's epoch. A rollback (a lost server without a replica)
  // starts a new one; a server refuses requests of another.
  int32_t epoch = 0;
  // sync push with --lr_scaling adascale, its last part: the slice's pieces (common/
  // gradient_noise.h PieceNoise), Σ of each piece's squared gradient-sum norm and trips^2.
  double noise_sq = 0, noise_n2 = 0;
  std::vector<KeyRange> ranges;
  std::vector<uint64_t> payload_bytes;  // one per payload frame
  // The message's body by type: an error's text, a registration's NodeInfo, a map, a trace's
  // events, a control topic's or an order's typed body (Cereal).
  std::string text;
  std::string topic;  // kCommand, kReport: what the message is

  template <class Archive>
  void save(Archive& ar) const;
  template <class Archive>
  void load(Archive& ar);
};

// Bounds that a decoded header must respect (a garbled header is refused before allocating).
inline constexpr size_t kMaxHeaderBytes = 1 << 20;
inline constexpr size_t kMaxRanges = 1 << 15;  // sparse rows: more go dense
inline constexpr size_t kMaxTopicBytes = 64;

}  // namespace tteps
