#include "common/cluster_map.h"

#include <unistd.h>

#include <cereal/archives/binary.hpp>
#include <cereal/types/common.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>
#include <sstream>

#include "common/codec.h"

namespace tteps {
namespace {

template <class T>
std::string Encode(const T& v) {
  std::ostringstream os(std::ios::binary);
  {
    cereal::BinaryOutputArchive ar(os);
    ar(v);
  }
  return os.str();
}

template <class T>
void Decode(const std::string& text, T* v) {
  std::istringstream is(text, std::ios::binary);
  try {
    cereal::BinaryInputArchive ar(is);
    ar(*v);
  } catch (const std::exception& e) {
    throw CodecError(std::string("garbled control message body: ") + e.what());
  }
}

}  // namespace

std::string NodeInfo::Name() const {
  std::string s = std::string(RoleName(role)) + " " + std::to_string(id) + " (";
  if (mpi_rank >= 0) s += "rank " + std::to_string(mpi_rank) + ", ";
  return s + "host " + host + ", pid " + std::to_string(pid) + ")";
}

std::string EncodeBody(const NodeInfo& v) { return Encode(v); }
std::string EncodeBody(const ClusterMap& v) { return Encode(v); }
void DecodeBody(const std::string& text, NodeInfo* v) { Decode(text, v); }
void DecodeBody(const std::string& text, ClusterMap* v) { Decode(text, v); }

std::string HostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  return buf;
}

}  // namespace tteps
