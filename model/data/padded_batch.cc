#include "model/data/padded_batch.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "model/data/mapped_reads.h"

namespace tteps::data {

int64_t PaddedBatch::total_points() const {
  return std::accumulate(lengths.begin(), lengths.end(), int64_t{0});
}

PaddedBatch MakeBatch(const Trips& trips, const std::vector<size_t>& indices,
                      const NormStats& stats, int64_t pad_multiple) {
  PaddedBatch b;
  b.size = static_cast<int64_t>(indices.size());
  std::vector<TripView> views;
  views.reserve(indices.size());
  for (size_t idx : indices) {
    if (idx >= trips.size()) {
      throw std::out_of_range("MakeBatch: trip index " + std::to_string(idx) +
                              " >= " + std::to_string(trips.size()));
    }
    views.push_back(trips.at(idx));
    b.max_len = std::max(b.max_len, static_cast<int64_t>(views.back().length));
  }
  if (pad_multiple > 1) b.max_len = (b.max_len + pad_multiple - 1) / pad_multiple * pad_multiple;
  const size_t cells = indices.size() * static_cast<size_t>(b.max_len);
  for (auto* seq : {&b.lngs, &b.lats, &b.states, &b.time_gap, &b.dist_gap}) seq->assign(cells, 0);
  for (auto* v : {&b.lengths, &b.driver_id, &b.week_id, &b.time_id}) v->reserve(indices.size());
  b.dist.reserve(indices.size());
  b.time.reserve(indices.size());

  for (size_t row = 0; row < views.size(); ++row) {
    const TripView& t = views[row];
    b.lengths.push_back(static_cast<int64_t>(t.length));
    b.driver_id.push_back(t.driver_id);
    b.week_id.push_back(t.week_id);
    b.time_id.push_back(t.time_id);
    b.dist.push_back(static_cast<float>((t.dist - stats.dist_mean) / stats.dist_std));
    b.time.push_back(static_cast<float>(t.time));
    const size_t base = row * static_cast<size_t>(b.max_len);
    for (size_t i = 0; i < t.length; ++i) {
      b.lngs[base + i] = static_cast<float>((t.lngs[i] - stats.lngs_mean) / stats.lngs_std);
      b.lats[base + i] = static_cast<float>((t.lats[i] - stats.lats_mean) / stats.lats_std);
    }
    std::copy(t.states, t.states + t.length, b.states.begin() + base);
    std::copy(t.time_gap, t.time_gap + t.length, b.time_gap.begin() + base);
    std::copy(t.dist_gap, t.dist_gap + t.length, b.dist_gap.begin() + base);
  }
  ThrowIfMappedReadFailed();  // a store's trips read after its shard was cut short
  return b;
}

}  // namespace tteps::data
