#include "model/deeptte/embedding_rows.h"

#include <algorithm>

namespace tteps::deeptte {

const std::vector<std::string>& EmbeddingTables() {
  // As registered in attr_net.cc: driver ids (24,000 x 16, most of the model) and start minutes.
  static const std::vector<std::string> kTables = {"attr_net.driverID_em.weight",
                                                   "attr_net.timeID_em.weight"};
  return kTables;
}

TableRows EmbeddingRows(const data::Trips& trips, const std::vector<std::vector<size_t>>& slices) {
  TableRows rows(2);
  for (const auto& slice : slices) {
    for (size_t i : slice) {
      const data::TripView t = trips.at(i);
      rows[0].push_back(t.driver_id);
      rows[1].push_back(t.time_id);
    }
  }
  for (auto& r : rows) {
    std::sort(r.begin(), r.end());
    r.erase(std::unique(r.begin(), r.end()), r.end());
  }
  return rows;
}

}  // namespace tteps::deeptte
