#include "model/data/pack.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "model/data/line_blocks.h"
#include "model/data/norm_stats.h"
#include "model/data/trip_parser.h"
#include "model/data/trip_store_writer.h"

namespace tteps::data {
namespace {

static_assert(LineBlock::kPadding >= TripParser::kPadding, "the parser reads past a line");

struct BadRecord {
  size_t line;  // 1-based within its block
  std::string reason;
};

struct ParsedBlock {
  size_t file = 0, lines = 0, bytes = 0;
  TripColumns trips;
  std::vector<BadRecord> bad;
};

ParsedBlock Parse(const LineBlock& b, TripParser& parser, BadRecordPolicy policy) {
  ParsedBlock out;
  out.file = b.file;
  out.bytes = b.size;
  Trip trip;
  std::string error;
  const std::string_view text = b.text();
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    ++out.lines;
    if (parser.ParsePadded(text.substr(at, end - at), &trip, &error)) {
      out.trips.Add(trip);
    } else {
      out.bad.push_back({out.lines, error});
      if (policy == BadRecordPolicy::kFail) break;  // the first one ends the pack
    }
    at = end + 1;
  }
  return out;
}

// Adds the trips of `c` one by one, in their order, as reading the same trips from JSON lines
// does: the statistics of a store are those of its input to the last bit.
void AddToStats(const TripColumns& c, NormStatsAccumulator* stats) {
  const float* points = c.points.data();
  for (size_t i = 0; i < c.size(); ++i) {
    TripView v;
    v.dist = c.dist[i];
    v.time = c.time[i];
    v.length = c.lengths[i];
    v.lngs = points;
    v.lats = points + v.length;
    v.states = points + 2 * v.length;
    v.time_gap = points + 3 * v.length;
    v.dist_gap = points + 4 * v.length;
    stats->Add(v);
    points += 5 * v.length;
  }
}

// The input files as the manifest records them; adds their sizes to *bytes_total.
std::vector<PackSource> StatSources(const std::vector<std::string>& inputs, uint64_t* bytes_total) {
  std::vector<PackSource> sources(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    struct stat sb {};
    if (::stat(inputs[i].c_str(), &sb) != 0) {
      throw DataError("cannot open data file '" + inputs[i] + "': " + std::strerror(errno));
    }
    if (S_ISDIR(sb.st_mode)) {
      throw DataError("cannot read data file '" + inputs[i] + "': it is a directory");
    }
    sources[i].path = inputs[i];
    sources[i].bytes = static_cast<uint64_t>(sb.st_size);
    sources[i].mtime_s = static_cast<int64_t>(sb.st_mtim.tv_sec);
    *bytes_total += sources[i].bytes;
  }
  return sources;
}

// Threads that parse blocks of lines. Blocks go in through Feed, at most `window` ahead of the
// writer; parsed ones come out in input order through Next. The first failure of a thread ends
// the pool and is thrown by Next.
class ParsePool {
 public:
  ParsePool(const PackOptions& opts, LineBlockReader* reader, BufferPool* buffers)
      : opts_(opts), reader_(reader), buffers_(buffers) {
    const int threads = std::max(1, opts.threads);
    window_ = 2 * static_cast<size_t>(threads) + 1;
    try {
      for (int t = 0; t < threads; ++t) threads_.emplace_back([this] { Work(); });
    } catch (...) {  // no destructor runs for a constructor that throws
      Stop();
      throw;
    }
  }
  ~ParsePool() { Stop(); }

  // The next block in input order, once parsed; nothing after the last one.
  std::optional<ParsedBlock> Next() {
    Feed();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock,
             [&] { return abort_ || done_.count(next_) > 0 || (input_done_ && !in_flight_); });
    if (abort_) std::rethrow_exception(failure_);
    if (in_flight_ == 0) return std::nullopt;
    ParsedBlock p = std::move(done_.at(next_));
    done_.erase(next_++);
    --in_flight_;
    return p;
  }

 private:
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      abort_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

  // Hands the threads blocks while the window allows.
  void Feed() {
    while (!input_done_ && in_flight_ < window_) {
      std::optional<LineBlock> b = reader_->Next();
      std::lock_guard<std::mutex> lock(mu_);
      if (!b) {
        input_done_ = true;
      } else {
        todo_.push_back(std::move(*b));
        ++in_flight_;
      }
      cv_.notify_all();
    }
  }

  void Work() {
    try {
      TripParser parser(opts_.limits);
      for (;;) {
        LineBlock b;
        {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [&] { return abort_ || !todo_.empty() || input_done_; });
          if (abort_ || todo_.empty()) return;
          b = std::move(todo_.front());
          todo_.pop_front();
        }
        ParsedBlock p = Parse(b, parser, opts_.bad_records);
        buffers_->Give(std::move(b.buffer));
        {
          std::lock_guard<std::mutex> lock(mu_);
          done_.emplace(b.seq, std::move(p));
        }
        cv_.notify_all();
      }
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!failure_) failure_ = std::current_exception();
        abort_ = true;
      }
      cv_.notify_all();
    }
  }

  const PackOptions& opts_;
  LineBlockReader* reader_;
  BufferPool* buffers_;
  size_t window_ = 1;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<LineBlock> todo_;
  std::map<size_t, ParsedBlock> done_;
  bool input_done_ = false, abort_ = false;
  std::exception_ptr failure_;
  size_t in_flight_ = 0, next_ = 0;
};

// Counts a parsed block's lines and records its bad ones in its file's report; the first bad
// record throws under BadRecordPolicy::kFail.
void Record(const ParsedBlock& p, BadRecordPolicy policy, ReadReport* r) {
  for (const BadRecord& bad : p.bad) {
    const size_t line = r->lines + bad.line;
    std::string error = r->file + ":" + std::to_string(line) + ": " + bad.reason;
    if (policy == BadRecordPolicy::kFail) throw DataError(error);
    ++r->skipped;
    if (r->first_bad_lines.size() < ReadReport::kMaxBadListed) {
      r->first_bad_lines.push_back(line);
      r->first_bad_reasons.push_back(std::move(error));
    }
  }
  r->lines += p.lines;
  r->records += p.trips.size();
}

}  // namespace

PackResult PackTrips(const PackOptions& opts,
                     const std::function<void(const PackProgress&)>& progress) {
  if (opts.inputs.empty()) throw DataError("no input files");
  const auto start = std::chrono::steady_clock::now();
  const auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  PackProgress prog;
  std::vector<PackSource> sources = StatSources(opts.inputs, &prog.bytes_total);
  TripStoreWriter writer(opts.out_dir, opts.shard_trips,
                         static_cast<int64_t>(opts.limits.min_points));
  BufferPool buffers;
  LineBlockReader reader(opts.inputs, opts.block_bytes, &buffers);
  NormStatsAccumulator stats;
  std::vector<ReadReport> reports(opts.inputs.size());
  for (size_t i = 0; i < reports.size(); ++i) reports[i].file = opts.inputs[i];
  double last_progress = 0;
  {
    ParsePool pool(opts, &reader, &buffers);
    while (std::optional<ParsedBlock> p = pool.Next()) {
      Record(*p, opts.bad_records, &reports[p->file]);
      writer.Append(p->trips);
      AddToStats(p->trips, &stats);
      prog.bytes_in += p->bytes;
      prog.trips = writer.trips();
      if (progress && seconds() - last_progress >= 0.5) {
        last_progress = prog.seconds = seconds();
        progress(prog);
      }
    }
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    sources[i].lines = reports[i].lines;
    sources[i].trips = reports[i].records;
    sources[i].skipped = reports[i].skipped;
  }
  if (writer.trips() == 0) throw DataError("no valid trips in the input");
  PackResult res;
  res.checksum = writer.Finish(stats.Finish(), sources);
  res.trips = writer.trips();
  res.bytes_in = reader.bytes_read();
  res.bytes_out = writer.bytes_written();
  res.reports = std::move(reports);
  res.seconds = seconds();
  prog.bytes_in = res.bytes_in;
  prog.seconds = res.seconds;
  if (progress) progress(prog);
  return res;
}

}  // namespace tteps::data
