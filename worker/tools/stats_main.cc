// tteps-stats: computes normalisation statistics (the stats.json format) from trip files.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <cstdio>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "common/init.h"
#include "model/data/norm_stats.h"
#include "model/data/trip_reader.h"
#include "model/data/trip_store.h"

DEFINE_string(data, "", "comma-separated JSON-lines trip files or trip stores (required)");
DEFINE_string(out, "", "statistics file to write, in the stats.json format (required)");
DEFINE_string(bad_records, "fail", "what to do with an invalid record: fail or skip");

namespace {

constexpr char kUsage[] =
    "Streams trip files and writes the mean and standard deviation of each field in the format\n"
    "of data/chengdu/stats.json (gaps are per-hop differences, std is the population one).\n"
    "Usage: tteps-stats --data FILE[,FILE...] --out stats.json [--bad_records=fail|skip]";

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> parts;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, ',');) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

int Run() {
  const std::vector<std::string> files = SplitCommas(FLAGS_data);
  if (files.empty() || FLAGS_out.empty()) {
    std::fprintf(stderr, "tteps-stats: --data and --out are required\n%s\n", kUsage);
    return 2;
  }
  tteps::data::ReadOptions opts;
  opts.bad_records = tteps::data::ParseBadRecordPolicy(FLAGS_bad_records);

  tteps::data::NormStatsAccumulator acc;
  tteps::data::Trip trip;
  for (const std::string& file : files) {
    if (tteps::data::IsTripStore(file)) {
      const auto store = tteps::data::TripStore::Open(file);
      for (size_t i = 0; i < store->size(); ++i) acc.Add(store->at(i));
      std::printf("%s: %zu trips (a store)\n", file.c_str(), store->size());
      continue;
    }
    tteps::data::TripReader reader(file, opts);
    while (reader.Next(&trip)) acc.Add(trip);
    std::printf("%s\n", reader.report().Summary().c_str());
  }
  tteps::data::SaveNormStats(acc.Finish(), FLAGS_out);
  std::printf("%s: statistics of %llu trips\n", FLAGS_out.c_str(),
              static_cast<unsigned long long>(acc.trips()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tteps::InitProgram(&argc, &argv, kUsage);
  try {
    return Run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tteps-stats: %s\n", e.what());
    return 1;
  }
}
