#include "worker/data/pack.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

#include "worker/data/norm_stats.h"
#include "worker/data/trip_parser.h"
#include "worker/data/trip_store_writer.h"

namespace tteps::data {
namespace {

// A run of whole lines of one input file.
struct Block {
  size_t seq = 0;   // position in the input, over all files
  size_t file = 0;  // index into the inputs
  std::string text;
};

struct BadRecord {
  size_t line;  // 1-based within its block
  std::string reason;
};

struct ParsedBlock {
  size_t file = 0, lines = 0, bytes = 0;
  TripColumns trips;
  NormStatsAccumulator stats;
  std::vector<BadRecord> bad;
};

ParsedBlock Parse(const Block& b, TripParser& parser, BadRecordPolicy policy) {
  ParsedBlock out;
  out.file = b.file;
  out.bytes = b.text.size() - TripParser::kPadding;
  Trip trip;
  std::string error;
  size_t at = 0;
  const size_t size = b.text.size() - TripParser::kPadding;  // the block's padding follows
  while (at < size) {
    size_t end = b.text.find('\n', at);
    if (end >= size) end = size;
    ++out.lines;
    const std::string_view line(b.text.data() + at, end - at);
    if (parser.ParsePadded(line, &trip, &error)) {
      out.trips.Add(trip);
      out.stats.Add(trip);
    } else {
      out.bad.push_back({out.lines, error});
      if (policy == BadRecordPolicy::kFail) break;  // the first one ends the pack
    }
    at = end + 1;
  }
  return out;
}

// Reads the inputs as blocks of whole lines, in order. Each input is read once, so its pages are
// dropped from the page cache behind the reader: at 10 million trips the input (15 GB) and the
// store (7 GB) fill this machine's memory, and reclaiming the input's pages cost a third of the
// CPU time.
class BlockReader {
 public:
  BlockReader(const std::vector<std::string>& files, size_t block_bytes)
      : files_(files), block_bytes_(block_bytes) {}
  ~BlockReader() { Close(); }
  BlockReader(const BlockReader&) = delete;
  BlockReader& operator=(const BlockReader&) = delete;

  std::optional<Block> Next() {
    while (file_ < files_.size()) {
      if (fd_ < 0) Open();
      Block b;
      b.seq = seq_;
      b.file = file_;
      b.text.swap(carry_);
      const size_t have = b.text.size();
      b.text.resize(std::max(block_bytes_, have + (1 << 16)));
      const size_t got = ReadFully(&b.text[have], b.text.size() - have);
      b.text.resize(have + got);
      bytes_read_ += got;
      if (got == 0) {  // the file's end: whatever is left is its last line
        Close();
        ++file_;
        if (b.text.empty()) continue;
      } else {
        const size_t last = b.text.rfind('\n');
        if (last == std::string::npos) {  // one line longer than the block: read on
          carry_.swap(b.text);
          continue;
        }
        carry_.assign(b.text, last + 1, std::string::npos);
        b.text.resize(last + 1);  // a line ends at its newline (an empty line is a bad record)
      }
      ++seq_;
      b.text.append(TripParser::kPadding, '\0');  // the parser reads past a line's end
      return b;
    }
    return std::nullopt;
  }
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  void Open() {
    fd_ = ::open(files_[file_].c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      throw DataError("cannot open data file '" + files_[file_] + "': " + std::strerror(errno));
    }
    offset_ = 0;
    ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);  // advice only: failures change nothing
  }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Up to `size` bytes; fewer only at the end of the file.
  size_t ReadFully(char* out, size_t size) {
    size_t got = 0;
    while (got < size) {
      const ssize_t n = ::read(fd_, out + got, size - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        throw DataError("read error in '" + files_[file_] + "': " + std::strerror(errno));
      }
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    // The bytes are copied out: their pages are of no further use to this process.
    ::posix_fadvise(fd_, 0, static_cast<off_t>(offset_ + got), POSIX_FADV_DONTNEED);
    offset_ += got;
    return got;
  }

  const std::vector<std::string>& files_;
  size_t block_bytes_;
  size_t file_ = 0, seq_ = 0;
  int fd_ = -1;
  uint64_t offset_ = 0;
  std::string carry_;
  uint64_t bytes_read_ = 0;
};

}  // namespace

PackResult PackTrips(const PackOptions& opts,
                     const std::function<void(const PackProgress&)>& progress) {
  if (opts.inputs.empty()) throw DataError("no input files");
  const auto start = std::chrono::steady_clock::now();
  const auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::vector<PackSource> sources(opts.inputs.size());
  PackProgress prog;
  for (size_t i = 0; i < opts.inputs.size(); ++i) {
    struct stat sb {};
    if (::stat(opts.inputs[i].c_str(), &sb) != 0) {
      throw DataError("cannot open data file '" + opts.inputs[i] + "': " + std::strerror(errno));
    }
    if (S_ISDIR(sb.st_mode)) {
      throw DataError("cannot read data file '" + opts.inputs[i] + "': it is a directory");
    }
    sources[i].path = opts.inputs[i];
    sources[i].bytes = static_cast<uint64_t>(sb.st_size);
    sources[i].mtime_s = static_cast<int64_t>(sb.st_mtim.tv_sec);
    prog.bytes_total += sources[i].bytes;
  }
  TripStoreWriter writer(opts.out_dir, opts.shard_trips, static_cast<int64_t>(opts.min_points));
  BlockReader reader(opts.inputs, opts.block_bytes);

  // Blocks go to the parsing threads through `todo`; parsed ones wait in `done` until every
  // earlier block is written. At most `window` blocks are read ahead of the writer.
  const int threads = std::max(1, opts.threads);
  const size_t window = 2 * static_cast<size_t>(threads) + 1;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Block> todo;
  std::map<size_t, ParsedBlock> done;
  bool input_done = false, abort = false;
  std::exception_ptr failure;
  size_t in_flight = 0;

  std::vector<std::thread> workers;
  const auto work = [&] {
    try {
      TripParser parser(opts.min_points);
      for (;;) {
        Block b;
        {
          std::unique_lock<std::mutex> lock(mu);
          cv.wait(lock, [&] { return abort || !todo.empty() || input_done; });
          if (abort || todo.empty()) return;
          b = std::move(todo.front());
          todo.pop_front();
        }
        ParsedBlock p = Parse(b, parser, opts.bad_records);
        {
          std::lock_guard<std::mutex> lock(mu);
          done.emplace(b.seq, std::move(p));
        }
        cv.notify_all();
      }
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (!failure) failure = std::current_exception();
        abort = true;
      }
      cv.notify_all();
    }
  };
  const auto stop = [&] {
    {
      std::lock_guard<std::mutex> lock(mu);
      abort = true;
    }
    cv.notify_all();
    for (auto& w : workers) w.join();
  };

  NormStatsAccumulator stats;
  std::vector<ReadReport> reports(opts.inputs.size());
  for (size_t i = 0; i < reports.size(); ++i) reports[i].file = opts.inputs[i];
  size_t next = 0;
  double last_progress = 0;
  try {
    for (int t = 0; t < threads; ++t) workers.emplace_back(work);
    for (;;) {
      // Feed the threads while the window allows.
      while (!input_done && in_flight < window) {
        std::optional<Block> b = reader.Next();
        std::lock_guard<std::mutex> lock(mu);
        if (!b) {
          input_done = true;
        } else {
          todo.push_back(std::move(*b));
          ++in_flight;
        }
        cv.notify_all();
      }
      ParsedBlock p;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return abort || done.count(next) > 0 || (input_done && !in_flight); });
        if (abort) std::rethrow_exception(failure);
        if (in_flight == 0) break;
        p = std::move(done.at(next));
        done.erase(next);
        --in_flight;
      }
      ++next;
      ReadReport& r = reports[p.file];
      for (const BadRecord& bad : p.bad) {
        const size_t line = r.lines + bad.line;
        std::string error = r.file + ":" + std::to_string(line) + ": " + bad.reason;
        if (opts.bad_records == BadRecordPolicy::kFail) throw DataError(error);
        ++r.skipped;
        if (r.first_bad_lines.size() < ReadReport::kMaxBadListed) {
          r.first_bad_lines.push_back(line);
          r.first_bad_reasons.push_back(std::move(error));
        }
      }
      r.lines += p.lines;
      r.records += p.trips.size();
      writer.Append(p.trips);
      stats.Merge(p.stats);
      prog.bytes_in += p.bytes;
      prog.trips = writer.trips();
      if (progress && seconds() - last_progress >= 0.5) {
        last_progress = prog.seconds = seconds();
        progress(prog);
      }
    }
  } catch (...) {
    stop();
    throw;
  }
  stop();
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
