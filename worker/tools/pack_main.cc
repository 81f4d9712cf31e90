// tteps-pack: converts DeepTTE JSON-lines into a trip store (model/data/trip_store_format.h),
// or checks a store's every byte against its manifest (--verify).
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "common/init.h"
#include "common/json_writer.h"
#include "common/progress.h"
#include "model/data/pack.h"
#include "model/data/trip_store.h"

DEFINE_string(out, "", "the store directory to create (must not exist, or be empty)");
DEFINE_string(verify, "", "a store directory: read every shard and check its checksum");
DEFINE_string(bad_records, "fail", "what to do with an invalid record: fail or skip");
DEFINE_int64(min_points, 3, "the fewest points a trip may have (the model's kernel_size)");
DEFINE_int64(max_points, 2000, "the most points a trip may have (0: no limit)");
DEFINE_double(max_trip_s, 86400, "the longest travel time (`time`, seconds) a trip may have");
DEFINE_double(max_trip_km, 1000, "the longest distance (`dist`, km) a trip may have");
DEFINE_int64(shard_trips, 65536, "trips per shard file");
DEFINE_int32(threads, 0, "parsing threads (0: one per core)");

namespace {

constexpr char kUsage[] =
    "Packs DeepTTE JSON-lines files into a trip store that every tteps reader takes in place of\n"
    "the files: binary shards read on demand through memory maps, a manifest with checksums, and\n"
    "the normalisation statistics of the trips (DIR/stats.json).\n"
    "  tteps-pack --out DIR FILE [FILE...] [--bad_records=skip] [--threads N]\n"
    "  tteps-pack --verify DIR";

bool Terminal() { return isatty(STDERR_FILENO) == 1; }

void ShowPack(const tteps::data::PackProgress& p) {
  const double mb = p.bytes_in / 1e6, rate = p.seconds > 0 ? mb / p.seconds : 0;
  const double left = rate > 0 ? (p.bytes_total - p.bytes_in) / 1e6 / rate : 0;
  std::fprintf(stderr, "\r[pack] %llu trips, %.0f/%.0f MB, %.0f trips/s, %.0f MB/s, ETA %s   ",
               static_cast<unsigned long long>(p.trips), mb, p.bytes_total / 1e6,
               p.seconds > 0 ? p.trips / p.seconds : 0.0, rate,
               tteps::FormatDuration(left).c_str());
}

void ShowVerify(size_t shards, uint64_t bytes, void* total) {
  std::fprintf(stderr, "\r[verify] %zu/%zu shards, %.0f MB   ", shards,
               *static_cast<size_t*>(total), bytes / 1e6);
}

int Verify() {
  const auto m = tteps::data::ReadStoreManifest(FLAGS_verify);
  size_t total = m.shards.size();
  tteps::data::VerifyTripStore(FLAGS_verify, Terminal() ? ShowVerify : nullptr, &total);
  if (Terminal()) std::fprintf(stderr, "\n");
  std::printf("%s\n", tteps::JsonObject()
                          .Add("store", FLAGS_verify)
                          .Add("ok", true)
                          .Add("trips", m.trips)
                          .Add("shards", static_cast<uint64_t>(m.shards.size()))
                          .Add("checksum", m.checksum)
                          .str()
                          .c_str());
  return 0;
}

int Pack(const std::vector<std::string>& inputs) {
  tteps::data::PackOptions o;
  o.inputs = inputs;
  o.out_dir = FLAGS_out;
  o.bad_records = tteps::data::ParseBadRecordPolicy(FLAGS_bad_records);
  if (FLAGS_min_points < 1) throw std::invalid_argument("--min_points must be at least 1");
  if (FLAGS_max_points < 0) throw std::invalid_argument("--max_points must be >= 0 (0: no limit)");
  if (!(FLAGS_max_trip_s > 0) || !(FLAGS_max_trip_km > 0)) {
    throw std::invalid_argument("--max_trip_s and --max_trip_km must be > 0");
  }
  if (FLAGS_shard_trips < 1) throw std::invalid_argument("--shard_trips must be at least 1");
  o.limits.min_points = static_cast<size_t>(FLAGS_min_points);
  o.limits.max_points = static_cast<size_t>(FLAGS_max_points);
  o.limits.max_time_s = FLAGS_max_trip_s;
  o.limits.max_dist_km = FLAGS_max_trip_km;
  o.shard_trips = static_cast<uint64_t>(FLAGS_shard_trips);
  o.threads = FLAGS_threads > 0
                  ? FLAGS_threads
                  : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const auto r = tteps::data::PackTrips(o, Terminal() ? ShowPack : nullptr);
  if (Terminal()) std::fprintf(stderr, "\n");
  uint64_t skipped = 0;
  for (const auto& rep : r.reports) {
    skipped += rep.skipped;
    std::fprintf(stderr, "%s\n", rep.Summary().c_str());
  }
  std::printf("%s\n", tteps::JsonObject()
                          .Add("store", FLAGS_out)
                          .Add("trips", r.trips)
                          .Add("skipped", skipped)
                          .Add("json_mb", r.bytes_in / 1e6)
                          .Add("store_mb", r.bytes_out / 1e6)
                          .Add("seconds", r.seconds)
                          .Add("mb_per_s", r.seconds > 0 ? r.bytes_in / 1e6 / r.seconds : 0.0)
                          .Add("threads", o.threads)
                          .Add("checksum", r.checksum)
                          .str()
                          .c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tteps::InitProgram(&argc, &argv, kUsage);
  try {
    if (!FLAGS_verify.empty()) {
      if (argc > 1 || !FLAGS_out.empty()) {
        std::fprintf(stderr, "tteps-pack: --verify takes a store and nothing else\n%s\n", kUsage);
        return 2;
      }
      return Verify();
    }
    const std::vector<std::string> inputs(argv + 1, argv + argc);
    if (FLAGS_out.empty() || inputs.empty()) {
      std::fprintf(stderr, "tteps-pack: --out and at least one input file are required\n%s\n",
                   kUsage);
      return 2;
    }
    for (const auto& in : inputs) {
      if (in.rfind("-", 0) == 0) {
        std::fprintf(stderr, "tteps-pack: unknown flag '%s'\n%s\n", in.c_str(), kUsage);
        return 2;
      }
    }
    return Pack(inputs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tteps-pack: %s\n", e.what());
    return 1;
  }
}
