#include "model/row_spans.h"

#include <algorithm>
#include <stdexcept>

namespace tteps {
namespace {

// Appends [begin, end), merged with the last span when they touch.
void Append(std::vector<KeyRange>* spans, int64_t begin, int64_t end) {
  if (!spans->empty() && spans->back().end == begin) {
    spans->back().end = end;
  } else {
    spans->push_back({begin, end});
  }
}

}  // namespace

RowSpans::RowSpans(const ParamLayout& layout, const std::vector<std::string>& tables) {
  std::vector<bool> is_table(layout.entries().size(), false);
  for (const auto& name : tables) {
    const auto& entries = layout.entries();
    const auto it = std::find_if(entries.begin(), entries.end(),
                                 [&](const ParamEntry& e) { return e.name == name; });
    if (it == entries.end()) {
      throw std::invalid_argument("sparse rows: the model has no parameter " + name);
    }
    if (it->shape.size() != 2) {
      throw std::invalid_argument("sparse rows: " + name + " is not a table (rows x width)");
    }
    is_table[it - entries.begin()] = true;
    tables_.push_back({name, it->offset, it->shape[0], it->shape[1]});
  }
  for (size_t i = 0; i < layout.entries().size(); ++i) {
    const ParamEntry& e = layout.entries()[i];
    if (is_table[i] || e.numel == 0) continue;
    Append(&dense_, e.offset, e.offset + e.numel);
    dense_keys_ += e.numel;
  }
}

std::vector<KeyRange> RowSpans::TableKeys() const {
  std::vector<KeyRange> out;
  for (const Table& t : tables_) out.push_back({t.offset, t.offset + t.rows * t.width});
  std::sort(out.begin(), out.end(),
            [](const KeyRange& a, const KeyRange& b) { return a.begin < b.begin; });
  return out;
}

std::vector<KeyRange> RowSpans::Spans(const TableRows& rows) const {
  if (rows.size() != tables_.size()) {
    throw std::invalid_argument("sparse rows: " + std::to_string(rows.size()) + " row lists for " +
                                std::to_string(tables_.size()) + " tables");
  }
  // Every row as a span, then everything in key order.
  std::vector<KeyRange> pieces = dense_;
  for (size_t t = 0; t < tables_.size(); ++t) {
    const Table& tab = tables_[t];
    int64_t last = -1;
    for (int64_t r : rows[t]) {
      if (r < 0 || r >= tab.rows || r <= last) {
        throw std::out_of_range("sparse rows: row " + std::to_string(r) + " of " + tab.name + " (" +
                                std::to_string(tab.rows) + " rows; ids must be sorted and unique)");
      }
      last = r;
      pieces.push_back({tab.offset + r * tab.width, tab.offset + (r + 1) * tab.width});
    }
  }
  std::sort(pieces.begin(), pieces.end(),
            [](const KeyRange& a, const KeyRange& b) { return a.begin < b.begin; });
  std::vector<KeyRange> out;
  for (const auto& p : pieces) Append(&out, p.begin, p.end);
  return out;
}

}  // namespace tteps
