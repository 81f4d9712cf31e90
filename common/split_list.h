// Comma-separated flag values: "a,b,,c" -> {"a", "b", "c"}.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tteps {

std::vector<std::string> SplitList(const std::string& csv);
// The same, each item an integer; throws std::invalid_argument naming a bad item.
std::vector<int64_t> SplitInts(const std::string& csv);
// The same, each item a number.
std::vector<double> SplitDoubles(const std::string& csv);

}  // namespace tteps
