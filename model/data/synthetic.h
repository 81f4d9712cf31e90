// SYNTHETIC taxi trips (not real Chengdu data) whose statistics imitate the Chengdu sample:
// for tests, benchmarks and scaling runs beyond the 1,200 real trips.
#pragma once

#include <cstdint>
#include <random>

#include "model/data/trip.h"

namespace tteps::data {

// Every generated point lies inside this box (degrees).
struct GeoBox {
  double min_lng, max_lng, min_lat, max_lat;
};
inline constexpr GeoBox kSyntheticBox{103.80, 104.25, 30.50, 30.80};
inline constexpr size_t kSyntheticMinPoints = 15;
inline constexpr size_t kSyntheticMaxPoints = 126;

// One synthetic trip: a random walk with a smoothly turning heading and nearly equally spaced
// points (~0.275 km per hop); travel times depend on the time of day (slow at ~8h and ~18h, less
// so at weekends), on a per-driver factor and on per-hop noise and stops. Deterministic for the
// state of `rng`, and identical across standard libraries (no std distributions).
// The trip passes TripParser's validation.
Trip GenerateTrip(std::mt19937_64& rng);

}  // namespace tteps::data
