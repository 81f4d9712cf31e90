#include "model/data/trip_json.h"

#include <charconv>
#include <string_view>
#include <vector>

namespace tteps::data {
namespace {

// Shortest round-trip form, with ".0" added to integral values ("20.0" as in the sample data).
template <typename T>
void AppendNumber(T v, std::string* out) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  const std::string_view text(buf, static_cast<size_t>(res.ptr - buf));
  out->append(text);
  if (text.find_first_of(".e") == std::string_view::npos) out->append(".0");
}

void AppendInt(int64_t v, std::string* out) {
  char buf[24];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, res.ptr);
}

void AppendKey(const char* key, std::string* out) {
  out->append(out->back() == '{' ? "\"" : ",\"");
  out->append(key);
  out->append("\":");
}

void AppendSequence(const char* key, const std::vector<float>& seq, std::string* out) {
  AppendKey(key, out);
  out->push_back('[');
  for (size_t i = 0; i < seq.size(); ++i) {
    if (i > 0) out->push_back(',');
    AppendNumber(seq[i], out);
  }
  out->push_back(']');
}

}  // namespace

void AppendTripJson(const Trip& trip, std::string* out) {
  out->push_back('{');
  AppendKey("driverID", out);
  AppendInt(trip.driver_id, out);
  AppendKey("dateID", out);
  AppendInt(trip.date_id, out);
  AppendKey("weekID", out);
  AppendInt(trip.week_id, out);
  AppendKey("timeID", out);
  AppendInt(trip.time_id, out);
  AppendKey("dist", out);
  AppendNumber(trip.dist, out);
  AppendKey("time", out);
  AppendNumber(trip.time, out);
  AppendSequence("lngs", trip.lngs, out);
  AppendSequence("lats", trip.lats, out);
  AppendSequence("states", trip.states, out);
  AppendSequence("time_gap", trip.time_gap, out);
  AppendSequence("dist_gap", trip.dist_gap, out);
  out->append("}\n");
}

}  // namespace tteps::data
