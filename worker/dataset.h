// Loads the training and evaluation trips as the configuration describes: files, held-out split.
#pragma once

#include <string>
#include <vector>

#include "common/job_config.h"
#include "worker/data/trip.h"
#include "worker/data/trip_reader.h"

namespace tteps {

struct Dataset {
  std::vector<data::Trip> train, eval;
  std::string description;  // one line for the log: files, counts, split
};

// Reads the files and holds out the evaluation trips. A trip needs `min_points` points (the
// model's kernel size). Throws data::DataError (bad records, unreadable files) or
// std::invalid_argument (options).
Dataset LoadDataset(const DataConfig& opts, int64_t min_points);

}  // namespace tteps
