#include "model/data/trip_parser.h"

#include <simdjson.h>

#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "common/json_writer.h"

namespace tteps::data {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

// Thrown by the checks below and caught in Parse, which turns it into the error text.
struct FieldError {
  const char* field;
  std::string reason;
};

[[noreturn]] void Fail(const char* field, std::string reason) {
  throw FieldError{field, std::move(reason)};
}

const char* TypeName(element_type t) {
  switch (t) {
    case element_type::ARRAY:
      return "an array";
    case element_type::OBJECT:
      return "an object";
    case element_type::INT64:
    case element_type::UINT64:
      return "an integer";
    case element_type::DOUBLE:
      return "a number";
    case element_type::STRING:
      return "a string";
    case element_type::BOOL:
      return "a boolean";
    case element_type::NULL_VALUE:
      return "null";
  }
  return "an unknown value";
}

std::string Num(double v) { return JsonNumber(v); }

element Get(const simdjson::dom::object& obj, const char* key) {
  element e;
  if (obj[key].get(e) != simdjson::SUCCESS) Fail(key, "missing");
  return e;
}

// An id: a JSON integer, or a number with an integral value such as 3.0, in [0, limit).
int64_t ReadId(const simdjson::dom::object& obj, const char* key, int64_t limit) {
  const element e = Get(obj, key);
  double v = 0;
  if (e.get_double().get(v) != simdjson::SUCCESS) {
    Fail(key, std::string("expected an integer, got ") + TypeName(e.type()));
  }
  if (std::floor(v) != v) Fail(key, "expected an integer, got " + Num(v));
  if (v < 0 || v >= static_cast<double>(limit)) {
    Fail(key, Num(v) + " is out of range [0, " + std::to_string(limit) + ")");
  }
  return static_cast<int64_t>(v);
}

double ReadNonNegative(const simdjson::dom::object& obj, const char* key) {
  const element e = Get(obj, key);
  double v = 0;
  if (e.get_double().get(v) != simdjson::SUCCESS) {
    Fail(key, std::string("expected a number, got ") + TypeName(e.type()));
  }
  if (!std::isfinite(v)) Fail(key, "value is not finite");
  if (v < 0) Fail(key, Num(v) + " is negative");
  return v;
}

enum class Values { kAny, kNonNegative, kZeroOrOne, kLongitude, kLatitude };

void ReadSequence(const simdjson::dom::object& obj, const char* key, Values values,
                  std::vector<float>* out) {
  const element e = Get(obj, key);
  simdjson::dom::array array;
  if (e.get_array().get(array) != simdjson::SUCCESS) {
    Fail(key, std::string("expected an array of numbers, got ") + TypeName(e.type()));
  }
  out->clear();
  out->reserve(array.size());
  size_t i = 0;
  for (element item : array) {
    double v = 0;
    if (item.get_double().get(v) != simdjson::SUCCESS) {
      Fail(key,
           "element " + std::to_string(i) + " is " + TypeName(item.type()) + ", expected a number");
    }
    const float f = static_cast<float>(v);
    // JSON has no NaN/Inf literal, but a finite double can still overflow a float.
    if (!std::isfinite(f)) {
      Fail(key, "element " + std::to_string(i) + " (" + Num(v) + ") is not finite as a float");
    }
    if (values == Values::kNonNegative && v < 0) {
      Fail(key, "element " + std::to_string(i) + " is negative (" + Num(v) + ")");
    }
    if (values == Values::kZeroOrOne && v != 0 && v != 1) {
      Fail(key, "element " + std::to_string(i) + " is " + Num(v) + ", expected 0 or 1");
    }
    if ((values == Values::kLongitude && !(v >= -180 && v <= 180)) ||
        (values == Values::kLatitude && !(v >= -90 && v <= 90))) {
      Fail(key, "element " + std::to_string(i) + " (" + Num(v) + ") is not a " +
                    (values == Values::kLongitude ? "longitude in [-180, 180]"
                                                  : "latitude in [-90, 90]"));
    }
    out->push_back(f);
    ++i;
  }
}

void CheckSameLength(const char* key, const std::vector<float>& seq, size_t expected) {
  if (seq.size() != expected) {
    Fail(key, "length " + std::to_string(seq.size()) + " differs from lngs (" +
                  std::to_string(expected) + ")");
  }
}

// time_gap and dist_gap are cumulative from the first point.
void CheckNonDecreasing(const char* key, const std::vector<float>& seq) {
  for (size_t i = 1; i < seq.size(); ++i) {
    if (seq[i] < seq[i - 1]) {
      Fail(key, "element " + std::to_string(i) + " (" + Num(seq[i]) +
                    ") is below the previous one; the values are cumulative");
    }
  }
}

// A record's optional "id": a string or an integer, kept as JSON text.
void ReadRecordId(const simdjson::dom::object& obj, std::string* id) {
  id->clear();
  element e;
  if (obj["id"].get(e) != simdjson::SUCCESS) return;
  std::string_view text;
  int64_t n = 0;
  if (e.get_string().get(text) == simdjson::SUCCESS) {
    *id = JsonQuote(std::string(text));
  } else if (e.get_int64().get(n) == simdjson::SUCCESS) {
    *id = std::to_string(n);
  } else {
    Fail("id", std::string("expected a string or an integer, got ") + TypeName(e.type()));
  }
}

}  // namespace

struct TripParser::Impl {
  TripLimits limits;
  simdjson::dom::parser parser;
  std::vector<char> buffer;  // the line followed by the padding simdjson requires
  std::string id;            // routes: the record's "id" as JSON

  void ParseOrThrow(std::string_view line, bool padded, Trip* trip);
  // The line's JSON object (its text copied to `buffer` first unless padded).
  simdjson::dom::object Object(std::string_view line, bool padded);
  // The ids, the distance and the travel time (optional for routes), and a route's "id".
  void ReadScalars(const simdjson::dom::object& obj, Trip* trip);
  // The five per-point sequences (time_gap optional for routes), checked against each other.
  void ReadSequences(const simdjson::dom::object& obj, Trip* trip) const;
};

static_assert(TripParser::kPadding >= simdjson::SIMDJSON_PADDING, "simdjson reads past the end");

void TripParser::Impl::ParseOrThrow(std::string_view line, bool padded, Trip* trip) {
  const simdjson::dom::object obj = Object(line, padded);
  ReadScalars(obj, trip);
  ReadSequences(obj, trip);
}

simdjson::dom::object TripParser::Impl::Object(std::string_view line, bool padded) {
  if (line.find_first_not_of(" \t\r\n") == std::string_view::npos) Fail("<json>", "empty line");
  const char* text = line.data();
  if (!padded) {
    if (buffer.size() < line.size() + simdjson::SIMDJSON_PADDING) {
      buffer.resize(line.size() + simdjson::SIMDJSON_PADDING);
    }
    std::memcpy(buffer.data(), line.data(), line.size());
    std::memset(buffer.data() + line.size(), 0, simdjson::SIMDJSON_PADDING);
    text = buffer.data();
  }
  element root;
  const auto status = parser.parse(text, line.size(), false).get(root);
  if (status != simdjson::SUCCESS) Fail("<json>", simdjson::error_message(status));
  simdjson::dom::object obj;
  if (root.get_object().get(obj) != simdjson::SUCCESS) {
    Fail("<json>", std::string("expected an object, got ") + TypeName(root.type()));
  }
  return obj;
}

void TripParser::Impl::ReadScalars(const simdjson::dom::object& obj, Trip* trip) {
  trip->driver_id = ReadId(obj, "driverID", kNumDrivers);
  element unused;
  // A route's day is not read by the model: it may be missing, as its time is.
  const bool dated = !limits.routes || obj["dateID"].get(unused) == simdjson::SUCCESS;
  trip->date_id = dated ? ReadId(obj, "dateID", kNumDates) : 0;
  trip->week_id = ReadId(obj, "weekID", kNumWeekdays);
  trip->time_id = ReadId(obj, "timeID", kNumMinutes);
  trip->dist = ReadNonNegative(obj, "dist");
  if (trip->dist > limits.max_dist_km) {
    Fail("dist", Num(trip->dist) + " km is more than the limit of " + Num(limits.max_dist_km) +
                     " km (--max_trip_km)");
  }
  if (limits.routes) ReadRecordId(obj, &id);
  const bool driven = !limits.routes || obj["time"].get(unused) == simdjson::SUCCESS;
  trip->time = driven ? ReadNonNegative(obj, "time") : 0;
  // The label divides the MAPE loss and metric: a zero travel time cannot be learned from.
  if (driven && trip->time <= 0) Fail("time", "must be > 0 seconds, got " + Num(trip->time));
  if (trip->time > limits.max_time_s) {
    Fail("time", Num(trip->time) + " s is more than the limit of " + Num(limits.max_time_s) +
                     " s (--max_trip_s)");
  }
}

void TripParser::Impl::ReadSequences(const simdjson::dom::object& obj, Trip* trip) const {
  ReadSequence(obj, "lngs", Values::kLongitude, &trip->lngs);
  ReadSequence(obj, "lats", Values::kLatitude, &trip->lats);
  ReadSequence(obj, "states", Values::kZeroOrOne, &trip->states);
  const size_t n = trip->lngs.size();
  element unused;
  if (!limits.routes || obj["time_gap"].get(unused) == simdjson::SUCCESS) {
    ReadSequence(obj, "time_gap", Values::kNonNegative, &trip->time_gap);
  } else {
    trip->time_gap.assign(n, 0.f);
  }
  ReadSequence(obj, "dist_gap", Values::kNonNegative, &trip->dist_gap);
  CheckSameLength("lats", trip->lats, n);
  CheckSameLength("states", trip->states, n);
  CheckSameLength("time_gap", trip->time_gap, n);
  CheckSameLength("dist_gap", trip->dist_gap, n);
  CheckNonDecreasing("time_gap", trip->time_gap);
  CheckNonDecreasing("dist_gap", trip->dist_gap);
  if (n < limits.min_points) {
    Fail("lngs", std::to_string(n) + " points, fewer than the minimum " +
                     std::to_string(limits.min_points));
  }
  if (limits.max_points > 0 && n > limits.max_points) {
    Fail("lngs", std::to_string(n) + " points, more than the maximum " +
                     std::to_string(limits.max_points) + " (--max_points)");
  }
}

TripParser::TripParser(size_t min_points) : TripParser(TripLimits{min_points}) {}

TripParser::TripParser(const TripLimits& limits) : impl_(std::make_unique<Impl>()) {
  impl_->limits = limits;
}
TripParser::~TripParser() = default;
const std::string& TripParser::id() const { return impl_->id; }
TripParser::TripParser(TripParser&&) noexcept = default;
TripParser& TripParser::operator=(TripParser&&) noexcept = default;

bool TripParser::Parse(std::string_view line, Trip* trip, std::string* error) {
  try {
    impl_->ParseOrThrow(line, false, trip);
    return true;
  } catch (const FieldError& e) {
    *error = std::string("field '") + e.field + "': " + e.reason;
    return false;
  }
}

bool TripParser::ParsePadded(std::string_view line, Trip* trip, std::string* error) {
  try {
    impl_->ParseOrThrow(line, true, trip);
    return true;
  } catch (const FieldError& e) {
    *error = std::string("field '") + e.field + "': " + e.reason;
    return false;
  }
}

}  // namespace tteps::data
