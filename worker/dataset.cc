#include "worker/dataset.h"

#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "worker/data/split.h"

namespace tteps {
namespace {

std::vector<data::Trip> Read(const std::vector<std::string>& files, const data::ReadOptions& opts,
                             std::ostringstream* desc) {
  std::vector<data::ReadReport> reports;
  auto trips = data::ReadTripFiles(files, opts, &reports);
  for (const auto& r : reports) {
    LOG(INFO) << r.Summary();
    if (r.skipped > 0) LOG(WARNING) << r.Summary();
    *desc << r.file << " (" << r.records << " trips";
    if (r.skipped) *desc << ", " << r.skipped << " bad skipped";
    *desc << ") ";
  }
  return trips;
}

std::vector<data::Trip> Take(std::vector<data::Trip>& all, const std::vector<size_t>& idx) {
  std::vector<data::Trip> out;
  out.reserve(idx.size());
  for (size_t i : idx) out.push_back(std::move(all[i]));
  return out;
}

}  // namespace

Dataset LoadDataset(const DataConfig& opts, int64_t min_points) {
  if (opts.train_files.empty()) throw std::invalid_argument("no training data (--train_data)");
  data::ReadOptions read;
  read.bad_records = data::ParseBadRecordPolicy(opts.bad_records);
  read.min_points = static_cast<size_t>(std::max<int64_t>(1, min_points));
  Dataset ds;
  std::ostringstream desc;
  desc << "train: ";
  auto all = Read(opts.train_files, read, &desc);
  if (!opts.eval_file.empty()) {
    ds.train = std::move(all);
    desc << "eval: ";
    ds.eval = Read({opts.eval_file}, read, &desc);
  } else if (opts.eval_fraction > 0) {
    data::Split split;
    if (opts.split == "random") {
      split = data::SplitByFraction(all.size(), opts.eval_fraction, opts.split_seed);
      desc << "| " << data::DescribeSplit(split, opts.eval_fraction, opts.split_seed);
    } else if (opts.split == "tail") {
      if (!(opts.eval_fraction < 1)) throw std::invalid_argument("--eval_fraction must be < 1");
      const size_t n_eval = static_cast<size_t>(std::llround(all.size() * opts.eval_fraction));
      for (size_t i = 0; i < all.size(); ++i) {
        (i < all.size() - n_eval ? split.train : split.eval).push_back(i);
      }
      desc << "| held out the last " << n_eval << " trips for evaluation";
    } else {
      throw std::invalid_argument("--split must be random or tail, not '" + opts.split + "'");
    }
    ds.train = Take(all, split.train);
    ds.eval = Take(all, split.eval);
  } else {
    ds.train = std::move(all);
  }
  if (ds.train.empty()) throw std::invalid_argument("the training set is empty");
  desc << " => " << ds.train.size() << " train, " << ds.eval.size() << " eval trips";
  ds.description = desc.str();
  return ds;
}

}  // namespace tteps
