// Read-only random access to a set of trips, wherever they live: parsed into memory (TripVector),
// memory-mapped from a packed store (TripStore) or a subset of either (TripSubset). Every reader
// of training or evaluation data (batching, slicing, evaluation) goes through this interface, so
// no process needs a copy of a large data set.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "model/data/trip.h"

namespace tteps::data {

// One trip's fields, pointing into storage that outlives the view (its Trips object).
struct TripView {
  int64_t driver_id = 0, date_id = 0, week_id = 0, time_id = 0;
  double dist = 0, time = 0;
  size_t length = 0;  // points; each pointer below holds `length` floats
  const float *lngs = nullptr, *lats = nullptr, *states = nullptr;
  const float *time_gap = nullptr, *dist_gap = nullptr;
};

class Trips {
 public:
  virtual ~Trips() = default;
  virtual size_t size() const = 0;
  // Throws std::out_of_range past the end; a store throws DataError for a damaged trip.
  virtual TripView at(size_t i) const = 0;
  // Points of trip i (what length-bucketing reads); may be cheaper than at(i).length.
  virtual size_t length(size_t i) const { return at(i).length; }
  // The dateID of trip i (what a day split reads).
  virtual int64_t date_id(size_t i) const { return at(i).date_id; }
  // How the trips will be read: in a random order (a full shuffle), or mostly in order (a
  // shuffle window, an evaluation). A memory-mapped store turns the kernel's read-ahead off for
  // random reads: it would read megabytes around every trip of a few hundred bytes.
  virtual void ExpectAccess(bool random) const { (void)random; }
  bool empty() const { return size() == 0; }
};

// Trips held in memory (parsed JSON-lines, tests).
class TripVector final : public Trips {
 public:
  TripVector() = default;
  explicit TripVector(std::vector<Trip> trips) : trips_(std::move(trips)) {}
  size_t size() const override { return trips_.size(); }
  TripView at(size_t i) const override;
  size_t length(size_t i) const override { return trips_.at(i).length(); }
  int64_t date_id(size_t i) const override { return trips_.at(i).date_id; }
  const std::vector<Trip>& trips() const { return trips_; }
  // A view of `t`; throws std::invalid_argument if its sequences differ in length.
  static TripView View(const Trip& t);

 private:
  std::vector<Trip> trips_;
};

// The trips `indices` of `base`, in that order (a held-out split, a worker's share).
class TripSubset final : public Trips {
 public:
  // Throws std::out_of_range if an index is past the base's end. Four bytes per trip: a base
  // of more than 2^32 trips throws std::length_error.
  TripSubset(std::shared_ptr<const Trips> base, const std::vector<size_t>& indices);
  size_t size() const override { return indices_.size(); }
  TripView at(size_t i) const override { return base_->at(indices_.at(i)); }
  size_t length(size_t i) const override { return base_->length(indices_.at(i)); }
  int64_t date_id(size_t i) const override { return base_->date_id(indices_.at(i)); }
  void ExpectAccess(bool random) const override { base_->ExpectAccess(random); }

 private:
  std::shared_ptr<const Trips> base_;
  std::vector<uint32_t> indices_;
};

// Copies a view into an owned Trip (tests, tools).
Trip ToTrip(const TripView& v);

}  // namespace tteps::data
