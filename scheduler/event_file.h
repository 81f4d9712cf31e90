// TensorBoard's event files, written by hand: TFRecord framing (a length, its masked CRC-32C,
// the record, its masked CRC-32C) around Event protocol buffers (tensorflow/core/util/
// event.proto, summary.proto) encoded field by field: a scalar is a Summary.Value with a
// simple_value, a text a Value with the "text" plugin's metadata and a string tensor. Every event
// is flushed at once, so `tensorboard --logdir` shows a running job.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace tteps::scheduler {

class EventFile {
 public:
  // Creates DIR (if needed) and DIR/events.out.tfevents.SECONDS.HOST, whose first event names
  // the format version. Throws std::runtime_error naming the file where it cannot.
  explicit EventFile(const std::string& dir);
  ~EventFile();
  EventFile(const EventFile&) = delete;
  EventFile& operator=(const EventFile&) = delete;

  void AddScalar(const std::string& tag, int64_t step, double value);
  void AddText(const std::string& tag, int64_t step, const std::string& text);
  const std::string& path() const { return path_; }

 private:
  // One Event with wall_time now, `step` and `what` (its encoded oneof field).
  void Write(int64_t step, const std::string& what);

  std::string path_;
  std::FILE* file_ = nullptr;
};

// The mask TFRecord puts over a CRC-32C (exposed for tests).
uint32_t MaskedCrc32c(const std::string& bytes);

}  // namespace tteps::scheduler
