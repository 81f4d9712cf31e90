// Loads the training and evaluation trips as the flags describe: files, held-out split.
#pragma once

#include <string>
#include <vector>

#include "common/split_list.h"  // SplitList, used with --train_data
#include "worker/data/trip.h"
#include "worker/data/trip_reader.h"

namespace tteps {

struct DatasetOptions {
  std::vector<std::string> train_files;
  std::string eval_file;         // if set, the evaluation set; else a held-out fraction
  double eval_fraction = 0;      // of the training files, used when eval_file is empty
  std::string split = "random";  // random (seeded shuffle) | tail (the last trips)
  uint64_t split_seed = 1;
  data::ReadOptions read;
};

struct Dataset {
  std::vector<data::Trip> train, eval;
  std::string description;  // one line for the log: files, counts, split
};

// Throws data::DataError (bad records, unreadable files) or std::invalid_argument (options).
Dataset LoadDataset(const DatasetOptions& opts);

}  // namespace tteps
