#include "model/dataset.h"

#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "model/data/split.h"
#include "model/data/trip_reader.h"
#include "model/data/trip_store.h"

namespace tteps {
std::shared_ptr<const data::Trips> OpenTrips(const std::vector<std::string>& paths,
                                             const std::string& bad_records, int64_t min_points,
                                             std::string* description,
                                             const data::TripLimits& limits, uint64_t* skipped) {
  std::ostringstream desc;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (!std::filesystem::is_directory(p, ec)) continue;
    if (!data::IsTripStore(p)) {
      throw data::DataError("'" + p + "' is a directory but not a trip store (no manifest.json; " +
                            "an interrupted tteps-pack leaves none)");
    }
    if (paths.size() != 1) {
      throw std::invalid_argument("the trip store '" + p + "' must be the only data source " +
                                  "(pack several JSON-lines files into one store)");
    }
    auto store = data::TripStore::Open(p);
    if (store->manifest().min_points < min_points) {
      throw data::DataError("the trip store '" + p + "' was packed with --min_points " +
                            std::to_string(store->manifest().min_points) +
                            ", and the model's kernel_size needs " + std::to_string(min_points) +
                            " points per trip: pack it again with --min_points " +
                            std::to_string(min_points));
    }
    if (description) {
      *description = p + " (store " + store->manifest().checksum + ", " +
                     std::to_string(store->size()) + " trips)";
    }
    return store;
  }
  data::ReadOptions read;
  read.bad_records = data::ParseBadRecordPolicy(bad_records);
  read.limits = limits;
  read.limits.min_points = static_cast<size_t>(std::max<int64_t>(1, min_points));
  std::vector<data::ReadReport> reports;
  auto trips = data::ReadTripFiles(paths, read, &reports);
  for (const auto& r : reports) {
    LOG(INFO) << r.Summary();
    if (r.skipped > 0) LOG(WARNING) << r.Summary();
    desc << (desc.tellp() > 0 ? " " : "") << r.file << " (" << r.records << " trips";
    if (r.skipped) desc << ", " << r.skipped << " bad skipped";
    if (skipped) *skipped += r.skipped;
    desc << ")";
  }
  if (description) *description = desc.str();
  return std::make_shared<data::TripVector>(std::move(trips));
}

std::vector<int64_t> HeldOutDays(const data::Trips& trips, int64_t days,
                                 const std::vector<int64_t>& dates) {
  if (!dates.empty()) return dates;
  std::vector<bool> present(data::kNumDates, false);
  for (size_t i = 0; i < trips.size(); ++i) present.at(trips.date_id(i)) = true;
  std::vector<int64_t> held;
  for (int64_t d = data::kNumDates - 1; d >= 0 && static_cast<int64_t>(held.size()) < days; --d) {
    if (present[d]) held.push_back(d);
  }
  std::sort(held.begin(), held.end());
  return held;
}

namespace {

std::string DatesText(const std::vector<int64_t>& dates) {
  std::string s;
  for (int64_t d : dates) s += (s.empty() ? "" : ",") + std::to_string(d);
  return s;
}

// Statistics further from --stats than this many of its standard deviations are named.
constexpr double kFarDeviations = 3;

// --split auto: day where the trips hold at least two dates.
std::string ResolveSplit(const std::string& split, const data::Trips& all) {
  if (split != "auto") return split;
  std::vector<bool> present(data::kNumDates, false);
  int dates = 0;
  for (size_t i = 0; i < all.size() && dates < 2; ++i) {
    if (!present.at(all.date_id(i))) dates += (present[all.date_id(i)] = true);
  }
  return dates >= 2 ? "day" : "random";
}

// Holds the evaluation trips out of `all` as `opts` says; sets ds->train, ds->eval and ds->split
// and returns the split's description.
std::string HoldOut(const DataConfig& opts, std::shared_ptr<const data::Trips> all, Dataset* ds) {
  ds->split =
      opts.eval_fraction > 0 || opts.split == "day" ? ResolveSplit(opts.split, *all) : "none";
  data::Split split;
  std::string desc;
  if (ds->split == "day") {
    const std::vector<int64_t> held = HeldOutDays(*all, opts.eval_days, opts.eval_dates);
    std::vector<bool> is_held(data::kNumDates, false);
    for (int64_t d : held) is_held.at(d) = true;
    for (size_t i = 0; i < all->size(); ++i) {
      (is_held.at(all->date_id(i)) ? split.eval : split.train).push_back(i);
    }
    if (split.eval.empty()) {
      throw std::invalid_argument("--split day: no trip of dateID " + DatesText(held) +
                                  " to hold out");
    }
    desc = "split day: held out the trips of dateID " + DatesText(held);
  } else if (ds->split == "random") {
    split = data::SplitByFraction(all->size(), opts.eval_fraction, opts.split_seed);
    desc = data::DescribeSplit(split, opts.eval_fraction, opts.split_seed);
  } else if (ds->split == "tail") {
    if (!(opts.eval_fraction < 1)) throw std::invalid_argument("--eval_fraction must be < 1");
    const size_t n = all->size();
    const size_t n_eval = static_cast<size_t>(std::llround(n * opts.eval_fraction));
    for (size_t i = 0; i < n; ++i) (i < n - n_eval ? split.train : split.eval).push_back(i);
    desc = "split tail: held out the last " + std::to_string(n_eval) + " trips";
  } else if (ds->split == "none") {
    ds->train = std::move(all);
    ds->eval = std::make_shared<data::TripVector>();
    return "no evaluation (--eval_fraction 0)";
  } else {
    throw std::invalid_argument("--split must be auto, day, random or tail, not '" + opts.split +
                                "'");
  }
  if (split.eval.empty()) {
    throw std::invalid_argument("--split " + ds->split + " holds out no trip of " +
                                std::to_string(all->size()) + " with --eval_fraction " +
                                std::to_string(opts.eval_fraction) +
                                ": raise --eval_fraction, or set it to 0 for no evaluation");
  }
  ds->train = std::make_shared<data::TripSubset>(all, split.train);
  ds->eval = std::make_shared<data::TripSubset>(all, split.eval);
  return desc;
}

// The statistics of every trip of --train_data: a store's own, else computed from `all`.
data::NormStats DataStats(const data::Trips& all, std::string* source) {
  if (const auto* store = dynamic_cast<const data::TripStore*>(&all)) {
    *source = store->stats_path();
    return data::LoadNormStats(store->stats_path());
  }
  *source = "computed from the " + std::to_string(all.size()) + " trips of --train_data";
  return data::ComputeNormStats(all);
}

void FindStats(const DataConfig& opts, const data::Trips& all, Dataset* ds) {
  std::string computed;
  if (opts.stats.empty()) {
    ds->stats = DataStats(all, &computed);
    ds->stats_source = computed;
    return;
  }
  ds->stats = data::LoadNormStats(opts.stats);
  ds->stats_source = opts.stats;
  data::NormStats own;
  try {
    own = DataStats(all, &computed);
  } catch (const data::DataError& e) {  // data too small to have statistics: --stats is its own
    LOG(INFO) << "no comparison with --stats: " << e.what();
    return;
  }
  for (const std::string& far : data::FarStatistics(ds->stats, own, kFarDeviations)) {
    ds->warnings.push_back("--stats " + opts.stats + " is far from the training data: " + far +
                           " (over " + std::to_string(static_cast<int>(kFarDeviations)) +
                           " deviations; without --stats a job uses its data's own)");
    LOG(WARNING) << ds->warnings.back();
  }
}

}  // namespace

JsonObject Dataset::Facts() const {
  JsonObject facts;
  facts.Add("split", split)
      .Add("train_trips", static_cast<uint64_t>(train->size()))
      .Add("eval_trips", static_cast<uint64_t>(eval->size()))
      .Add("stats", stats_source);
  if (!warnings.empty()) facts.Add("warnings", warnings);
  return facts;
}

Dataset LoadDataset(const DataConfig& opts, int64_t min_points) {
  if (opts.train_files.empty()) throw std::invalid_argument("no training data (--train_data)");
  Dataset ds;
  std::string text;
  data::TripLimits limits;
  limits.max_points = static_cast<size_t>(opts.max_points);
  limits.max_time_s = opts.max_trip_s;
  limits.max_dist_km = opts.max_trip_km;
  auto all = OpenTrips(opts.train_files, opts.bad_records, min_points, &text, limits, &ds.skipped);
  if (const auto* store = dynamic_cast<const data::TripStore*>(all.get())) {
    ds.store_checksum = store->manifest().checksum;
    ds.mapped_bytes += store->mapped_bytes();
  }
  FindStats(opts, *all, &ds);
  std::ostringstream desc;
  desc << "train: " << text << " ";
  if (!opts.eval_file.empty()) {
    ds.train = all;
    ds.split = "file";
    ds.eval = OpenTrips({opts.eval_file}, opts.bad_records, min_points, &text, limits, &ds.skipped);
    if (const auto* store = dynamic_cast<const data::TripStore*>(ds.eval.get())) {
      ds.mapped_bytes += store->mapped_bytes();
    }
    if (ds.eval->empty()) {
      throw std::invalid_argument("--eval_data " + opts.eval_file + ": no trip to evaluate (" +
                                  text + ")");
    }
    desc << "eval: " << text;
  } else {
    desc << "| " << HoldOut(opts, all, &ds);
  }
  if (ds.train->empty()) throw std::invalid_argument("the training set is empty");
  desc << " => " << ds.train->size() << " train, " << ds.eval->size() << " eval trips; stats "
       << ds.stats_source;
  ds.description = desc.str();
  return ds;
}

}  // namespace tteps
