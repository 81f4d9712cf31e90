// The wire format: one ZeroMQ multipart message per request. Frame 0 is a Header encoded with
// Cereal; frames 1..n are raw float32 payloads, one per key range, read in place.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/key_range.h"

namespace tteps {

inline constexpr uint32_t kMagic = 0x54544550;  // "TTEP"
inline constexpr uint16_t kProtocolVersion = 5;

enum class Role : uint8_t { kScheduler = 0, kServer = 1, kWorker = 2 };
const char* RoleName(Role role);

enum class MsgType : uint8_t {
  kError = 0,   // text: what went wrong with the request `request_id`
  kRegister,    // node -> scheduler; body: RegisterInfo
  kClusterMap,  // scheduler -> node; body: ClusterMap
  kInit,        // worker 0 -> server: initial values for the ranges (payloads)
  kInitAck,
  kPush,  // worker -> server: gradient sums for the ranges, `samples` trips, computed
          // on version `step`
  kPushAck,
  kPull,             // worker -> server: values of the ranges once version >= `step` (sync) or
                     // the worker's clock allows it (SSP)
  kPullReply,        // server -> worker: payloads; `step` = version served
  kHeartbeat,        // node -> scheduler
  kMetrics,          // server -> scheduler; text: its statistics, one JSON object
  kSetAccumulation,  // scheduler -> worker; `samples` = micro-batches per step
  kDone,             // worker -> scheduler: finished its steps
  kShutdown,         // scheduler -> node: exit; text non-empty means the job failed
  kNormPartial,      // server -> scheduler: squared norm of its part of version `step`'s gradient
  kNormTotal,        // scheduler -> servers: the global gradient norm of version `step`
  kSnapshot,         // worker 0 -> scheduler (ring modes): the parameters after `step` steps, one
                     // payload; samples = 1 for the final snapshot
  kStop,             // scheduler -> worker: the time budget (--max_train_s) is spent; finish at
                     // the next point where the workers can agree on a last step
  kTrace,            // node -> scheduler; text: timeline events (common/trace.h) for --trace
  kGo,               // scheduler -> workers: every worker is ready (data loaded); start training
  kReady,            // worker -> scheduler: data loaded and model built, ready to train
  kTrainReport,      // worker -> scheduler; body: the worker's TrainReport (Cereal)
  kTypeCount         // not a type: the number of types
};
const char* TypeName(MsgType type);

struct Header {
  uint32_t magic = kMagic;
  uint16_t version = kProtocolVersion;
  MsgType type = MsgType::kError;
  Role sender_role = Role::kWorker;
  int32_t sender_id = -1;    // worker or server index (0-based); -1 for the scheduler
  uint64_t request_id = 0;   // echoed in the reply
  int64_t step = 0;          // version / clock, by type
  int64_t samples = 0;       // trips behind a push; accumulation in kSetAccumulation
  uint64_t fingerprint = 0;  // parameter layout fingerprint (push, pull, init)
  double held_s = 0;         // pull replies: how long the server held the pull before answering
  double norm = -1;          // push: norm of the mean gradient; norm messages: the value
  // push: this worker was told to stop (kStop); pull reply: training ends with this version
  bool stop = false;
  std::vector<KeyRange> ranges;
  std::vector<uint64_t> payload_bytes;  // one per payload frame
  std::string text;                     // error text, or a control message's encoded body

  template <class Archive>
  void save(Archive& ar) const;
  template <class Archive>
  void load(Archive& ar);
};

// Bounds that a decoded header must respect (a garbled header is refused before allocating).
inline constexpr size_t kMaxHeaderBytes = 1 << 20;
inline constexpr size_t kMaxRanges = 1024;

}  // namespace tteps
