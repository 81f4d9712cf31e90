// The format versions of what one tteps writes and another reads: the files a job leaves
// (model.pt, trip stores, server checkpoints) and the messages between processes. A reader
// refuses any other version by name (docs/compatibility.md); a change to a format that an older
// reader would misread bumps its number here.
#pragma once

#include <cstdint>

namespace tteps {

inline constexpr uint32_t kModelFileFormat = 1;   // model.pt ("tteps.deeptte.v1")
inline constexpr uint32_t kTripStoreFormat = 1;   // a trip store's manifest and shard headers
inline constexpr uint32_t kCheckpointFormat = 1;  // a server's checkpoint file
inline constexpr uint16_t kProtocolVersion = 18;  // every message's header (common/message.h)

}  // namespace tteps
