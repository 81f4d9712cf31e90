#include "model/data/trip_reader.h"

#include <glog/logging.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <utility>

#include "model/data/text_start.h"

namespace tteps::data {

BadRecordPolicy ParseBadRecordPolicy(const std::string& s) {
  if (s == "fail") return BadRecordPolicy::kFail;
  if (s == "skip") return BadRecordPolicy::kSkip;
  throw std::invalid_argument("bad-record policy '" + s + "': expected 'fail' or 'skip'");
}

std::string ReadReport::Summary() const {
  std::string out = file + ": " + std::to_string(records) + (records == 1 ? " trip" : " trips");
  if (skipped == 0) return out;
  out += ", " + std::to_string(skipped) + " bad record" + (skipped == 1 ? "" : "s") + " skipped (";
  out += first_bad_lines.size() == 1 ? "line " : "lines ";
  for (size_t i = 0; i < first_bad_lines.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(first_bad_lines[i]);
  }
  if (skipped > first_bad_lines.size()) {
    out += " and " + std::to_string(skipped - first_bad_lines.size()) + " more";
  }
  if (!first_bad_reasons.empty()) {
    // The reason starts with "<file>:<line>: ", already said above.
    const std::string prefix = file + ":" + std::to_string(first_bad_lines[0]) + ": ";
    const std::string& reason = first_bad_reasons[0];
    out += "; first: ";
    out += reason.compare(0, prefix.size(), prefix) == 0 ? reason.substr(prefix.size()) : reason;
  }
  return out + ")";
}

TripReader::TripReader(const std::string& path, ReadOptions opts)
    : in_(path), opts_(opts), parser_(opts.limits) {
  report_.file = path;
  if (!in_.is_open()) {
    throw DataError("cannot open data file '" + path + "': " + std::strerror(errno));
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw DataError("cannot read data file '" + path + "': it is a directory");
  }
  char head[8];
  in_.read(head, sizeof(head));
  const auto got = static_cast<size_t>(in_.gcount());
  in_.clear();
  in_.seekg(static_cast<std::streamoff>(TextStart(path, std::string_view(head, got))));
}

bool TripReader::Next(Trip* trip) {
  while (std::getline(in_, line_)) {
    ++report_.lines;
    std::string error;
    if (parser_.Parse(line_, trip, &error)) {
      ++report_.records;
      return true;
    }
    error = report_.file + ":" + std::to_string(report_.lines) + ": " + error;
    if (opts_.bad_records == BadRecordPolicy::kFail) throw DataError(error);
    ++report_.skipped;
    if (report_.first_bad_lines.size() < ReadReport::kMaxBadListed) {
      LOG(WARNING) << "skipping bad record: " << error;
      report_.first_bad_lines.push_back(report_.lines);
      report_.first_bad_reasons.push_back(std::move(error));
    }
  }
  if (in_.bad()) {
    throw DataError(report_.file + ": read error after line " + std::to_string(report_.lines));
  }
  return false;
}

std::vector<Trip> ReadTrips(const std::string& path, const ReadOptions& opts, ReadReport* report) {
  TripReader reader(path, opts);
  std::vector<Trip> trips;
  Trip trip;
  while (reader.Next(&trip)) trips.push_back(std::move(trip));
  if (report != nullptr) *report = reader.report();
  return trips;
}

std::vector<Trip> ReadTripFiles(const std::vector<std::string>& paths, const ReadOptions& opts,
                                std::vector<ReadReport>* reports) {
  std::vector<Trip> trips;
  if (reports != nullptr) reports->clear();
  for (const std::string& path : paths) {
    ReadReport report;
    std::vector<Trip> part = ReadTrips(path, opts, &report);
    if (trips.empty()) {
      trips = std::move(part);
    } else {
      trips.insert(trips.end(), std::make_move_iterator(part.begin()),
                   std::make_move_iterator(part.end()));
    }
    if (reports != nullptr) reports->push_back(std::move(report));
  }
  return trips;
}

}  // namespace tteps::data
