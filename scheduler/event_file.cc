#include "scheduler/event_file.h"

#include <glog/logging.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "common/cluster_map.h"
#include "model/data/crc32c.h"

namespace tteps::scheduler {
namespace {

// Protocol buffers' wire format, as far as events need it.
void Varint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
void Key(std::string* out, int field, int wire_type) { Varint(out, (field << 3) | wire_type); }
template <class T>
void Fixed(std::string* out, int field, T v) {  // double (wire type 1) or float (5)
  Key(out, field, sizeof(T) == 8 ? 1 : 5);
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));  // little-endian, as on every machine tteps runs on
  out->append(bytes, sizeof(T));
}
void Bytes(std::string* out, int field, const std::string& bytes) {
  Key(out, field, 2);
  Varint(out, bytes.size());
  out->append(bytes);
}

std::string Le(uint64_t v, int bytes) {
  std::string s;
  for (int i = 0; i < bytes; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return s;
}

}  // namespace

uint32_t MaskedCrc32c(const std::string& bytes) {
  const uint32_t crc = data::Crc32c(0, bytes.data(), bytes.size());
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

EventFile::EventFile(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  path_ = dir + "/events.out.tfevents." + std::to_string(seconds) + "." + HostName();
  file_ = std::fopen(path_.c_str(), "wb");
  if (!file_) throw std::runtime_error("cannot write the TensorBoard event file " + path_);
  std::string what;
  Bytes(&what, 3, "brain.Event:2");  // Event.file_version
  Write(0, what);
}

EventFile::~EventFile() {
  if (file_) std::fclose(file_);
}

void EventFile::AddScalar(const std::string& tag, int64_t step, double value) {
  std::string v;
  Bytes(&v, 1, tag);                        // Value.tag
  Fixed(&v, 2, static_cast<float>(value));  // Value.simple_value
  std::string summary, what;
  Bytes(&summary, 1, v);     // Summary.value
  Bytes(&what, 5, summary);  // Event.summary
  Write(step, what);
}

void EventFile::AddText(const std::string& tag, int64_t step, const std::string& text) {
  std::string plugin, metadata, tensor, v;
  Bytes(&plugin, 1, "text");    // PluginData.plugin_name
  Bytes(&metadata, 1, plugin);  // SummaryMetadata.plugin_data
  Key(&tensor, 1, 0);           // TensorProto.dtype = DT_STRING
  Varint(&tensor, 7);
  Bytes(&tensor, 2, "");    // TensorProto.tensor_shape: a scalar
  Bytes(&tensor, 8, text);  // TensorProto.string_val
  Bytes(&v, 1, tag);
  Bytes(&v, 9, metadata);  // Value.metadata
  Bytes(&v, 8, tensor);    // Value.tensor
  std::string summary, what;
  Bytes(&summary, 1, v);
  Bytes(&what, 5, summary);
  Write(step, what);
}

void EventFile::Write(int64_t step, const std::string& what) {
  std::string event;
  Fixed(&event, 1,
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
            .count());  // Event.wall_time
  Key(&event, 2, 0);    // Event.step
  Varint(&event, static_cast<uint64_t>(step));
  event += what;
  const std::string length = Le(event.size(), 8);
  const std::string record =
      length + Le(MaskedCrc32c(length), 4) + event + Le(MaskedCrc32c(event), 4);
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size() ||
      std::fflush(file_) != 0) {
    LOG_FIRST_N(ERROR, 1) << "cannot write the TensorBoard event file " << path_
                          << " (a full disk?); the job goes on without it";
  }
}

}  // namespace tteps::scheduler
