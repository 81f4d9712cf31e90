// Control-message bodies: the cluster map (with the job's configuration), a node's
// registration, a train report, a server's statistics, a membership view and the heartbeats'
// bodies. The first byte picks the type;
// decoding must accept or throw CodecError, and an accepted body must encode back the same.
#include "common/busy_peers.h"
#include "common/cereal_body.h"
#include "common/cluster_map.h"
#include "common/topics/server_stats.h"
#include "common/topics/train_report.h"
#include "common/view.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

template <class T>
void RoundTrip(const std::string& body) {
  using namespace tteps;
  T v;
  try {
    v = DecodeCereal<T>(body);
  } catch (const CodecError&) {
    return;
  }
  const std::string again = EncodeCereal(v);
  if (EncodeCereal(DecodeCereal<T>(again)) != again) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tteps::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tteps;
  if (size == 0) return 0;
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 7) {
    case 0: {
      RoundTrip<ClusterMap>(body);
      try {
        DecodeCereal<ClusterMap>(body).config.Validate();  // must refuse, not crash
      } catch (const std::exception&) {
      }
      break;
    }
    case 1:
      RoundTrip<NodeInfo>(body);
      break;
    case 2: {
      RoundTrip<TrainReport>(body);
      try {
        DecodeCereal<TrainReport>(body).ToJson();
      } catch (const CodecError&) {
      }
      break;
    }
    case 3:
      RoundTrip<server::ServerStats>(body);
      try {
        DecodeCereal<server::ServerStats>(body).ToJson();
      } catch (const CodecError&) {
      }
      break;
    case 4:
      RoundTrip<View>(body);
      break;
    case 5:
      RoundTrip<HeartbeatBody>(body);
      break;
    default:
      RoundTrip<HeartbeatAck>(body);
  }
  return 0;
}
