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

std::vector<int64_t> SplitInts(const std::string& csv) {
  std::vector<int64_t> out;
  for (const auto& item : SplitList(csv)) {
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size()) throw std::invalid_argument("not an integer: '" + item + "'");
    out.push_back(v);
  }
  return out;
}

}  // namespace tteps
