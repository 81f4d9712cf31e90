#include "model/data/norm_stats.h"

#include <simdjson.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "common/json_writer.h"

namespace tteps::data {
namespace {

struct Field {
  const char* key;
  double NormStats::*member;
  bool is_std;
};

// Sorted by key, as in the shipped stats.json.
constexpr Field kFields[] = {
    {"dist_gap_mean", &NormStats::dist_gap_mean, false},
    {"dist_gap_std", &NormStats::dist_gap_std, true},
    {"dist_mean", &NormStats::dist_mean, false},
    {"dist_std", &NormStats::dist_std, true},
    {"lats_mean", &NormStats::lats_mean, false},
    {"lats_std", &NormStats::lats_std, true},
    {"lngs_mean", &NormStats::lngs_mean, false},
    {"lngs_std", &NormStats::lngs_std, true},
    {"time_gap_mean", &NormStats::time_gap_mean, false},
    {"time_gap_std", &NormStats::time_gap_std, true},
    {"time_mean", &NormStats::time_mean, false},
    {"time_std", &NormStats::time_std, true},
};

// Six significant digits, for messages.
std::string Short(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

NormStats LoadNormStats(const std::string& path) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  const auto status = parser.load(path).get(root);
  if (status == simdjson::IO_ERROR) {
    throw DataError("cannot read stats file '" + path + "': " + std::strerror(errno));
  }
  if (status != simdjson::SUCCESS) {
    throw DataError(path + ": invalid JSON: " + simdjson::error_message(status));
  }
  simdjson::dom::object obj;
  if (root.get_object().get(obj) != simdjson::SUCCESS) {
    throw DataError(path + ": expected a JSON object");
  }
  NormStats stats;
  for (const Field& f : kFields) {
    simdjson::dom::element e;
    if (obj[f.key].get(e) != simdjson::SUCCESS) {
      throw DataError(path + ": key '" + f.key + "': missing");
    }
    double v = 0;
    if (e.get_double().get(v) != simdjson::SUCCESS || !std::isfinite(v)) {
      throw DataError(path + ": key '" + f.key + "': expected a finite number");
    }
    if (f.is_std && !(v > 0)) {
      throw DataError(path + ": key '" + f.key + "': a standard deviation must be positive, got " +
                      JsonNumber(v));
    }
    stats.*f.member = v;
  }
  return stats;
}

void SaveNormStats(const NormStats& s, const std::string& path) {
  std::string text = "{\n";
  for (const Field& f : kFields) {
    text += "  " + JsonQuote(f.key) + ": " + JsonNumber(s.*f.member);
    text += &f == &kFields[std::size(kFields) - 1] ? "\n" : ",\n";
  }
  text += "}\n";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw DataError("cannot write stats file '" + path + "': " + std::strerror(errno));
  out << text;
  out.close();
  if (!out) throw DataError("error writing stats file '" + path + "'");
}

double NormStatsAccumulator::Running::Mean() const {
  return count == 0 ? 0.0 : shift + sum / static_cast<double>(count);
}

double NormStatsAccumulator::Running::M2() const {
  return count == 0 ? 0.0 : std::max(0.0, sum_sq - sum * sum / static_cast<double>(count));
}

double NormStatsAccumulator::Running::Std() const {
  return count == 0 ? 0.0 : std::sqrt(M2() / static_cast<double>(count));
}

void NormStatsAccumulator::Add(const TripView& trip) {
  dist_.Add(trip.dist);
  time_.Add(trip.time);
  for (size_t i = 0; i < trip.length; ++i) lngs_.Add(trip.lngs[i]);
  for (size_t i = 0; i < trip.length; ++i) lats_.Add(trip.lats[i]);
  for (size_t i = 1; i < trip.length; ++i) {
    time_gap_.Add(double{trip.time_gap[i]} - double{trip.time_gap[i - 1]});
  }
  for (size_t i = 1; i < trip.length; ++i) {
    dist_gap_.Add(double{trip.dist_gap[i]} - double{trip.dist_gap[i - 1]});
  }
}

void NormStatsAccumulator::Add(const Trip& trip) { Add(TripVector::View(trip)); }

NormStats NormStatsAccumulator::Finish() const {
  if (trips() == 0) throw DataError("cannot compute normalisation statistics from 0 trips");
  const struct {
    const char* name;
    const Running& r;
    double NormStats::*mean;
    double NormStats::*std;
  } parts[] = {
      {"dist", dist_, &NormStats::dist_mean, &NormStats::dist_std},
      {"time", time_, &NormStats::time_mean, &NormStats::time_std},
      {"lngs", lngs_, &NormStats::lngs_mean, &NormStats::lngs_std},
      {"lats", lats_, &NormStats::lats_mean, &NormStats::lats_std},
      {"time_gap", time_gap_, &NormStats::time_gap_mean, &NormStats::time_gap_std},
      {"dist_gap", dist_gap_, &NormStats::dist_gap_mean, &NormStats::dist_gap_std},
  };
  NormStats stats;
  for (const auto& p : parts) {
    const double sd = p.r.Std();
    if (!(sd > 0)) {
      throw DataError(std::string("cannot compute normalisation statistics: the standard "
                                  "deviation of '") +
                      p.name + "' over " + std::to_string(p.r.count) + " values is 0");
    }
    stats.*p.mean = p.r.Mean();
    stats.*p.std = sd;
  }
  return stats;
}

NormStats ComputeNormStats(const std::vector<Trip>& trips) {
  NormStatsAccumulator acc;
  for (const Trip& t : trips) acc.Add(t);
  return acc.Finish();
}

NormStats ComputeNormStats(const Trips& trips) {
  trips.ExpectAccess(false);
  NormStatsAccumulator acc;
  for (size_t i = 0; i < trips.size(); ++i) acc.Add(trips.at(i));
  return acc.Finish();
}

std::vector<std::string> FarStatistics(const NormStats& given, const NormStats& data,
                                       double deviations) {
  std::vector<std::string> far;
  for (size_t i = 0; i + 1 < std::size(kFields); i += 2) {
    const Field& mean = kFields[i];
    const Field& sd = kFields[i + 1];
    const double distance = std::abs(data.*mean.member - given.*mean.member);
    if (distance > deviations * given.*sd.member) {
      std::string name(mean.key);
      name.resize(name.size() - std::strlen("_mean"));
      far.push_back(name + ": mean " + Short(data.*mean.member) + " against " +
                    Short(given.*mean.member) + " +- " + Short(given.*sd.member));
    }
  }
  return far;
}

}  // namespace tteps::data
