#include "model/data/trips.h"

#include <limits>
#include <stdexcept>
#include <string>

namespace tteps::data {

TripView TripVector::at(size_t i) const {
  try {
    return View(trips_.at(i));
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument("trip " + std::to_string(i) +
                                " has per-point sequences of unequal length");
  }
}

TripView TripVector::View(const Trip& t) {
  TripView v;
  v.driver_id = t.driver_id;
  v.date_id = t.date_id;
  v.week_id = t.week_id;
  v.time_id = t.time_id;
  v.dist = t.dist;
  v.time = t.time;
  v.length = t.length();
  if (t.lats.size() != v.length || t.states.size() != v.length || t.time_gap.size() != v.length ||
      t.dist_gap.size() != v.length) {
    throw std::invalid_argument("per-point sequences of unequal length");
  }
  v.lngs = t.lngs.data();
  v.lats = t.lats.data();
  v.states = t.states.data();
  v.time_gap = t.time_gap.data();
  v.dist_gap = t.dist_gap.data();
  return v;
}

TripSubset::TripSubset(std::shared_ptr<const Trips> base, const std::vector<size_t>& indices)
    : base_(std::move(base)) {
  const size_t n = base_->size();
  if (n > std::numeric_limits<uint32_t>::max()) {
    throw std::length_error("trip subset: a base of " + std::to_string(n) +
                            " trips is more than 2^32");
  }
  indices_.reserve(indices.size());
  for (size_t i : indices) {
    if (i >= n) {
      throw std::out_of_range("trip subset: index " + std::to_string(i) +
                              " >= " + std::to_string(n));
    }
    indices_.push_back(static_cast<uint32_t>(i));
  }
}

Trip ToTrip(const TripView& v) {
  Trip t;
  t.driver_id = v.driver_id;
  t.date_id = v.date_id;
  t.week_id = v.week_id;
  t.time_id = v.time_id;
  t.dist = v.dist;
  t.time = v.time;
  t.lngs.assign(v.lngs, v.lngs + v.length);
  t.lats.assign(v.lats, v.lats + v.length);
  t.states.assign(v.states, v.states + v.length);
  t.time_gap.assign(v.time_gap, v.time_gap + v.length);
  t.dist_gap.assign(v.dist_gap, v.dist_gap + v.length);
  return t;
}

}  // namespace tteps::data
