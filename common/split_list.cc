#include "common/split_list.h"

#include <sstream>
#include <stdexcept>

namespace tteps {

std::vector<std::string> SplitList(const std::string& csv) {
  std::vector<std::string> out;
  std::stringstream ss(csv);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

namespace {

// Each item of `csv` through `parse` (std::stoll, std::stod, ...), which must use all of it.
template <class T, class Parse>
std::vector<T> SplitParsed(const std::string& csv, Parse parse, const char* what) {
  std::vector<T> out;
  for (const auto& item : SplitList(csv)) {
    size_t used = 0;
    T v{};
    try {
      v = parse(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size())
      throw std::invalid_argument(std::string("not ") + what + ": '" + item + "'");
    out.push_back(v);
  }
  return out;
}

}  // namespace

std::vector<int64_t> SplitInts(const std::string& csv) {
  return SplitParsed<int64_t>(
      csv, [](const std::string& s, size_t* used) { return std::stoll(s, used); }, "an integer");
}

std::vector<double> SplitDoubles(const std::string& csv) {
  return SplitParsed<double>(
      csv, [](const std::string& s, size_t* used) { return std::stod(s, used); }, "a number");
}

}  // namespace tteps
