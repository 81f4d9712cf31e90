// Timelines in Chrome's trace-event format (chrome://tracing, ui.perfetto.dev): each process
// records complete spans ("ph":"X": compute, push, pull, wait, allreduce, ...) and hands them
// in chunks to a sink; the scheduler writes every process's chunks into one file (--trace).
// Timestamps are the host's wall clock in microseconds, so the processes of one host line up.
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>

namespace tteps {

class Tracer {
 public:
  using Clock = std::chrono::steady_clock;
  // `sink` receives comma-separated JSON events (no brackets).
  using Sink = std::function<void(std::string events)>;
  // Events of process `pid`, named `process_name` in the viewer; a chunk goes to the sink once
  // `chunk_events` or kChunkBytes are buffered (and at Flush). kChunkBytes keeps a chunk well
  // inside a message header's text limit (kMaxHeaderBytes, 1 MB).
  static constexpr size_t kChunkBytes = 256 << 10;
  Tracer(int pid, const std::string& process_name, Sink sink, size_t chunk_events = 2000);
  ~Tracer();

  // Thread-safe. `tid` separates rows within the process (1: training loop, 2: communication).
  void Span(const char* name, Clock::time_point begin, Clock::time_point end, int tid = 1);
  // Names a row of this process in the viewer.
  void NameThread(int tid, const std::string& name);
  void Flush();

 private:
  void Add(const std::string& event);     // buffers; hands a full chunk to the sink
  void Append(const std::string& event);  // mu_ held
  double Micros(Clock::time_point t) const;

  int pid_;
  Sink sink_;
  size_t chunk_events_;
  double wall_minus_steady_us_;  // maps steady time points onto the wall clock
  std::mutex mu_;
  std::string buffer_;
  size_t buffered_ = 0;
};

// A span from `begin` until now, if there is a tracer.
inline void TraceSince(Tracer* tracer, const char* name, Tracer::Clock::time_point begin,
                       int tid = 1) {
  if (tracer) tracer->Span(name, begin, Tracer::Clock::now(), tid);
}

// Records a span from construction to destruction; a null tracer records nothing.
class ScopedSpan {
 public:
  ScopedSpan(Tracer* tracer, const char* name, int tid = 1)
      : tracer_(tracer), name_(name), tid_(tid), begin_(Tracer::Clock::now()) {}
  ~ScopedSpan() {
    if (tracer_) tracer_->Span(name_, begin_, Tracer::Clock::now(), tid_);
  }
  ScopedSpan(const ScopedSpan&) = delete;
  ScopedSpan& operator=(const ScopedSpan&) = delete;

 private:
  Tracer* tracer_;
  const char* name_;
  int tid_;
  Tracer::Clock::time_point begin_;
};

// The trace file: chunks from any process, appended as they come; Close() ends the JSON.
class TraceFile {
 public:
  // Throws std::runtime_error if `path` cannot be written.
  explicit TraceFile(const std::string& path);
  ~TraceFile();
  void Append(const std::string& events);
  void Close();

 private:
  std::FILE* f_ = nullptr;
  bool first_ = true;
};

}  // namespace tteps
