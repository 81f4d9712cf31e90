#include "common/trace.h"

#include <stdexcept>

#include "common/json_writer.h"

namespace tteps {

Tracer::Tracer(int pid, const std::string& process_name, Sink sink, size_t chunk_events)
    : pid_(pid), sink_(std::move(sink)), chunk_events_(chunk_events) {
  const auto wall = std::chrono::system_clock::now().time_since_epoch();
  const auto steady = Clock::now().time_since_epoch();
  wall_minus_steady_us_ = std::chrono::duration<double, std::micro>(wall - steady).count();
  std::lock_guard<std::mutex> lock(mu_);
  Append(JsonObject()
             .Add("name", "process_name")
             .Add("ph", "M")
             .Add("pid", pid_)
             .Add("args", JsonObject().Add("name", process_name))
             .str());
}

Tracer::~Tracer() { Flush(); }

double Tracer::Micros(Clock::time_point t) const {
  return std::chrono::duration<double, std::micro>(t.time_since_epoch()).count() +
         wall_minus_steady_us_;
}

void Tracer::Span(const char* name, Clock::time_point begin, Clock::time_point end, int tid) {
  Add(JsonObject()
          .Add("name", name)
          .Add("ph", "X")
          .Add("pid", pid_)
          .Add("tid", tid)
          .Add("ts", Micros(begin))
          .Add("dur", std::chrono::duration<double, std::micro>(end - begin).count())
          .str());
}

void Tracer::NameThread(int tid, const std::string& name) {
  Add(JsonObject()
          .Add("name", "thread_name")
          .Add("ph", "M")
          .Add("pid", pid_)
          .Add("tid", tid)
          .Add("args", JsonObject().Add("name", name))
          .str());
}

void Tracer::Add(const std::string& event) {
  std::string chunk;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Append(event);
    if (buffered_ < chunk_events_ && buffer_.size() < kChunkBytes) return;
    chunk.swap(buffer_);
    buffered_ = 0;
  }
  sink_(std::move(chunk));  // outside the lock: the sink may take its time
}

void Tracer::Append(const std::string& event) {
  if (!buffer_.empty()) buffer_ += ',';
  buffer_ += event;
  ++buffered_;
}

void Tracer::Flush() {
  std::string chunk;
  {
    std::lock_guard<std::mutex> lock(mu_);
    chunk.swap(buffer_);
    buffered_ = 0;
  }
  if (!chunk.empty()) sink_(std::move(chunk));
}

TraceFile::TraceFile(const std::string& path) : f_(std::fopen(path.c_str(), "w")) {
  if (!f_) throw std::runtime_error("cannot write the trace file " + path);
  std::fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", f_);
}

TraceFile::~TraceFile() { Close(); }

void TraceFile::Append(const std::string& events) {
  if (!f_ || events.empty()) return;
  if (!first_) std::fputs(",\n", f_);
  std::fputs(events.c_str(), f_);
  first_ = false;
}

void TraceFile::Close() {
  if (!f_) return;
  std::fputs("\n]}\n", f_);
  std::fclose(f_);
  f_ = nullptr;
}

}  // namespace tteps
