// Loads the training and evaluation trips as the configuration describes: JSON-lines files or a
// packed trip store (memory-mapped, nothing copied), and the held-out split.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/job_config.h"
#include "common/json_writer.h"
#include "model/data/norm_stats.h"
#include "model/data/trip_parser.h"
#include "model/data/trips.h"

namespace tteps {

struct Dataset {
  std::shared_ptr<const data::Trips> train, eval;  // never null; eval may be empty
  std::string description;                         // one line for the log: files, counts, split
  std::string store_checksum;  // the training store's identity; empty for JSON-lines
  uint64_t mapped_bytes = 0;   // of the stores' shard files
  uint64_t skipped = 0;        // bad records skipped (--bad_records skip), train and eval
  // How the evaluation trips were chosen: "day", "random", "tail", "file" (--eval_data) or
  // "none" (--eval_fraction 0).
  std::string split;
  // The normalisation statistics the model is built with, and where they come from.
  data::NormStats stats;
  std::string stats_source;
  // What the user should know about the data (a statistic far from --stats'), one line each.
  std::vector<std::string> warnings;

  // summary.json's "data": {"split", "train_trips", "eval_trips", "stats", "warnings" if any}.
  JsonObject Facts() const;
};

// One data source: a trip store (a directory with manifest.json; alone in `paths`) or JSON-lines
// files, read whole. A store packed for shorter trips than `min_points` is refused. Throws
// data::DataError (bad records, unreadable files, a damaged store) or std::invalid_argument.
// `limits` other than min_points apply to JSON-lines (a store's were applied when it was packed);
// `skipped` (if given) gets the bad records skipped (--bad_records skip).
std::shared_ptr<const data::Trips> OpenTrips(const std::vector<std::string>& paths,
                                             const std::string& bad_records, int64_t min_points,
                                             std::string* description = nullptr,
                                             const data::TripLimits& limits = {},
                                             uint64_t* skipped = nullptr);

// Reads the data, holds out the evaluation trips (--eval_data, or --split auto | day | random |
// tail; auto is day where the training data holds at least two dates, else random) and finds the
// normalisation statistics: --stats if given (a warning names each statistic of the training
// data far from it), else those of every trip of --train_data (a store's own stats.json, which
// tteps-pack computed the same way). A trip needs `min_points` points (the model's kernel size).
// An evaluation asked for that would have no trip is an error here, before any training.
Dataset LoadDataset(const DataConfig& opts, int64_t min_points);

// The held-out dateIDs of --split day: `dates` if given, else the latest `days` days present.
std::vector<int64_t> HeldOutDays(const data::Trips& trips, int64_t days,
                                 const std::vector<int64_t>& dates);

}  // namespace tteps
