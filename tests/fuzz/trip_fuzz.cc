// Trip JSON lines: TripParser::Parse on arbitrary text returns true with a valid trip or false
// with a message naming the field; it never throws or crashes.
#include <cmath>
#include <string_view>

#include "model/data/trip_parser.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tteps::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static tteps::data::TripParser parser(2);
  tteps::data::Trip trip;
  std::string error;
  const bool ok =
      parser.Parse(std::string_view(reinterpret_cast<const char*>(data), size), &trip, &error);
  if (!ok && error.rfind("field '", 0) != 0) __builtin_trap();  // errors name their field
  if (ok && (trip.length() < 2 || !(trip.time > 0) || !std::isfinite(trip.dist))) {
    __builtin_trap();
  }
  return 0;
}
