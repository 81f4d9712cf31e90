// Writes a trip as one JSON line of the DeepTTE format (the inverse of TripParser).
#pragma once

#include <string>

#include "model/data/trip.h"

namespace tteps::data {

// Appends the trip's JSON object and a '\n' to *out. Numbers are written in their shortest
// round-trip form, so reading the line back gives the same floats and doubles. The trip must
// hold finite numbers only (JSON has no NaN or Inf).
void AppendTripJson(const Trip& trip, std::string* out);

}  // namespace tteps::data
