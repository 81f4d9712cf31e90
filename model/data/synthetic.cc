#include "model/data/synthetic.h"

#include <algorithm>
#include <cmath>

#include "model/data/shuffle.h"

namespace tteps::data {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kKmPerDegLat = 110.574;
constexpr double kKmPerDegLngEquator = 111.320;

// Random numbers built on the raw engine output only, so a seed gives the same trips with
// every standard library.
double Uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

double Normal(std::mt19937_64& rng) {      // Box–Muller
  const double u1 = 1.0 - Uniform01(rng);  // in (0, 1]
  const double u2 = Uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * kPi * u2);
}

double Gamma(std::mt19937_64& rng, double shape, double scale) {  // Marsaglia–Tsang, shape >= 1
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    const double x = Normal(rng);
    double v = 1.0 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    const double u = Uniform01(rng);
    if (u < 1.0 - 0.0331 * x * x * x * x ||
        std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) {
      return d * v * scale;
    }
  }
}

// A fixed speed factor in [0.85, 1.15] per driver (splitmix64 hash of the id).
double DriverFactor(int64_t driver_id) {
  uint64_t z = static_cast<uint64_t>(driver_id) + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return 0.85 + 0.30 * static_cast<double>(z >> 11) * 0x1.0p-53;
}

double Bump(double x, double centre, double width) {
  const double z = (x - centre) / width;
  return std::exp(-0.5 * z * z);
}

// Typical speed (km/h) at an hour of the day: rush hours near 8h and 18h, busy daytime.
double BaseSpeed(double hour, bool weekend) {
  const double rush = weekend ? 0.4 : 1.0;
  const double daytime =
      1.0 / (1.0 + std::exp(-(hour - 9.0) * 2.0)) - 1.0 / (1.0 + std::exp(-(hour - 20.0) * 2.0));
  return 36.0 - rush * (10.0 * Bump(hour, 8.3, 0.9) + 10.0 * Bump(hour, 18.0, 1.2)) - 7.0 * daytime;
}

// Minute of the day a trip starts: few trips between midnight and 6h.
int64_t StartMinute(std::mt19937_64& rng) {
  for (;;) {
    const auto minute = static_cast<int64_t>(UniformBelow(rng, kNumMinutes));
    if (minute >= 6 * 60 || Uniform01(rng) < 0.15) return minute;
  }
}

size_t TripPoints(std::mt19937_64& rng) {  // 15 + Gamma(1.85, 11): like the sample's lengths
  for (;;) {
    const auto n = kSyntheticMinPoints + static_cast<size_t>(Gamma(rng, 1.85, 11.0));
    if (n <= kSyntheticMaxPoints) return n;
  }
}

bool Inside(double lng, double lat, double margin) {
  const GeoBox& b = kSyntheticBox;
  return lng > b.min_lng + margin && lng < b.max_lng - margin && lat > b.min_lat + margin &&
         lat < b.max_lat - margin;
}

constexpr double kCentreLng = 104.06, kCentreLat = 30.655;
constexpr double kMargin = 1e-3;  // keeps float rounding inside the box

// One hop of a trip from (lng, lat) on `heading`: mostly gentle bends, now and then a turn at a
// crossing, back towards the centre where it would leave the box. Returns its length in km.
double Hop(std::mt19937_64& rng, double* lng, double* lat, double* heading) {
  *heading += 0.12 * Normal(rng);
  if (Uniform01(rng) < 0.08) *heading += (Uniform01(rng) < 0.5 ? -0.5 : 0.5) * kPi;
  const double hop = std::max(0.0, 0.275 + 0.13 * Normal(rng));  // km
  const double km_per_deg_lng = kKmPerDegLngEquator * std::cos(*lat * kPi / 180.0);
  double next_lng = *lng + hop * std::sin(*heading) / km_per_deg_lng;
  double next_lat = *lat + hop * std::cos(*heading) / kKmPerDegLat;
  if (!Inside(next_lng, next_lat, kMargin)) {
    // Head back towards the centre: that stays inside the (convex) box.
    *heading = std::atan2((kCentreLng - *lng) * km_per_deg_lng, (kCentreLat - *lat) * kKmPerDegLat);
    next_lng = *lng + hop * std::sin(*heading) / km_per_deg_lng;
    next_lat = *lat + hop * std::cos(*heading) / kKmPerDegLat;
  }
  *lng = next_lng;
  *lat = next_lat;
  return hop;
}

}  // namespace

Trip GenerateTrip(std::mt19937_64& rng) {
  const GeoBox& box = kSyntheticBox;

  Trip t;
  t.driver_id = static_cast<int64_t>(UniformBelow(rng, kNumDrivers));
  // dateID is the day of August 2014 as in the sample (the 24th a Sunday, weekID 6).
  t.date_id = static_cast<int64_t>(UniformBelow(rng, kNumDates));
  t.week_id = (t.date_id + 3) % kNumWeekdays;
  t.time_id = StartMinute(rng);
  const size_t n = TripPoints(rng);

  double lng = std::clamp(kCentreLng + 0.036 * Normal(rng), box.min_lng + 0.02, box.max_lng - 0.02);
  double lat = std::clamp(kCentreLat + 0.028 * Normal(rng), box.min_lat + 0.02, box.max_lat - 0.02);
  double heading = 2.0 * kPi * Uniform01(rng);  // radians, clockwise from north
  const bool weekend = t.week_id >= 5;
  // Long trips tend to use faster roads (ring roads, expressways); the rest is the trip's luck.
  const double speed_factor =
      DriverFactor(t.driver_id) * std::pow(n / 35.0, 0.35) * std::exp(0.3 * Normal(rng));
  bool occupied = Uniform01(rng) < 0.7;
  double dist = 0, elapsed = 0;

  for (auto* seq : {&t.lngs, &t.lats, &t.states, &t.time_gap, &t.dist_gap}) seq->reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) {
      const double hop = Hop(rng, &lng, &lat, &heading);
      const double hour = std::fmod((t.time_id * 60.0 + elapsed) / 3600.0, 24.0);
      const double speed = BaseSpeed(hour, weekend) * speed_factor * std::exp(0.4 * Normal(rng));
      double seconds = hop / speed * 3600.0;
      if (Uniform01(rng) < 0.06) seconds += 120.0 * -std::log(1.0 - Uniform01(rng));  // a stop
      elapsed += std::max(1.0, std::round(seconds));  // GPS times are whole seconds
      dist += hop;
      // Pick-ups are likelier than drop-offs: mostly occupied, as in the sample.
      if (Uniform01(rng) < (occupied ? 0.04 : 0.115)) occupied = !occupied;
    }
    t.lngs.push_back(static_cast<float>(lng));
    t.lats.push_back(static_cast<float>(lat));
    t.states.push_back(occupied ? 1.0f : 0.0f);
    t.time_gap.push_back(static_cast<float>(elapsed));
    t.dist_gap.push_back(static_cast<float>(dist));
  }
  t.dist = dist;
  t.time = elapsed;
  return t;
}

}  // namespace tteps::data
