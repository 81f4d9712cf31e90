// tteps-gen: writes SYNTHETIC trips (not real Chengdu data) in the trajectories.jsonl format.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "common/init.h"
#include "model/data/synthetic.h"
#include "model/data/trip_json.h"

DEFINE_int64(trips, 1000, "number of synthetic trips to write");
DEFINE_string(out, "", "output JSON-lines file (required)");
DEFINE_uint64(seed, 1, "random seed; the same seed gives the same trips");

namespace {

constexpr char kUsage[] =
    "Writes SYNTHETIC taxi trips - generated, NOT real Chengdu data - in the DeepTTE JSON-lines\n"
    "format of data/chengdu/trajectories.jsonl. Their statistics imitate the real sample\n"
    "(lengths, hop distances, speeds by time of day and driver), for tests and scaling runs.\n"
    "Usage: tteps-gen --trips N --out FILE [--seed S]";

int Run() {
  if (FLAGS_out.empty()) {
    std::fprintf(stderr, "tteps-gen: --out is required\n%s\n", kUsage);
    return 2;
  }
  if (FLAGS_trips < 0) {
    std::fprintf(stderr, "tteps-gen: --trips must be >= 0, got %lld\n",
                 static_cast<long long>(FLAGS_trips));
    return 2;
  }
  std::FILE* out = std::fopen(FLAGS_out.c_str(), "wb");
  if (out == nullptr) {
    std::fprintf(stderr, "tteps-gen: cannot open '%s' for writing: %s\n", FLAGS_out.c_str(),
                 std::strerror(errno));
    return 1;
  }
  std::mt19937_64 rng(FLAGS_seed);
  std::string buffer;
  constexpr size_t kFlushBytes = 1 << 20;
  bool ok = true;
  for (int64_t i = 0; i < FLAGS_trips && ok; ++i) {
    tteps::data::AppendTripJson(tteps::data::GenerateTrip(rng), &buffer);
    if (buffer.size() >= kFlushBytes || i + 1 == FLAGS_trips) {
      ok = std::fwrite(buffer.data(), 1, buffer.size(), out) == buffer.size();
      buffer.clear();
    }
  }
  if (std::fclose(out) != 0) ok = false;
  if (!ok) {
    std::fprintf(stderr, "tteps-gen: error writing '%s': %s\n", FLAGS_out.c_str(),
                 std::strerror(errno));
    return 1;
  }
  std::printf("%s: %lld SYNTHETIC trips (seed %llu)\n", FLAGS_out.c_str(),
              static_cast<long long>(FLAGS_trips), static_cast<unsigned long long>(FLAGS_seed));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tteps::InitProgram(&argc, &argv, kUsage);
  return Run();
}
