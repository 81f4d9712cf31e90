#include "worker/data/pack.h"

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

#include "worker/data/line_blocks.h"
#include "worker/data/norm_stats.h"
#include "worker/data/trip_parser.h"
#include "worker/data/trip_store_writer.h"

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
  TripStoreWriter writer(opts.out_dir, opts.shard_trips,
                         static_cast<int64_t>(opts.limits.min_points));
  BufferPool pool;
  LineBlockReader reader(opts.inputs, opts.block_bytes, &pool);

  // Blocks go to the parsing threads through `todo`; parsed ones wait in `done` until every
  // earlier block is written. At most `window` blocks are read ahead of the writer.
  const int threads = std::max(1, opts.threads);
  const size_t window = 2 * static_cast<size_t>(threads) + 1;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<LineBlock> todo;
  std::map<size_t, ParsedBlock> done;
  bool input_done = false, abort = false;
  std::exception_ptr failure;
  size_t in_flight = 0;

  std::vector<std::thread> workers;
  const auto work = [&] {
    try {
      TripParser parser(opts.limits);
      for (;;) {
        LineBlock b;
        {
          std::unique_lock<std::mutex> lock(mu);
          cv.wait(lock, [&] { return abort || !todo.empty() || input_done; });
          if (abort || todo.empty()) return;
          b = std::move(todo.front());
          todo.pop_front();
        }
        ParsedBlock p = Parse(b, parser, opts.bad_records);
        pool.Give(std::move(b.buffer));
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
        std::optional<LineBlock> b = reader.Next();
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
      AddToStats(p.trips, &stats);
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
