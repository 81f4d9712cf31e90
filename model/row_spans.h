// Which keys of the flat parameter vector a sparse exchange sends: every key of the dense
// tensors, and of each embedding table only the rows a step's trips use (the others' gradient
// is exactly zero, and the step reads no other row). Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/key_range.h"
#include "model/param_layout.h"

namespace tteps {

// Row ids per table, in the order of the table names RowSpans was made with.
using TableRows = std::vector<std::vector<int64_t>>;

class RowSpans {
 public:
  // `tables`: names of 2-d layout entries (rows x width) sent by rows. Throws
  // std::invalid_argument for a name the layout lacks or an entry that is not 2-d.
  RowSpans(const ParamLayout& layout, const std::vector<std::string>& tables);
  // Sorted, disjoint spans: the dense entries whole and the listed rows (sorted, unique, in
  // range: std::out_of_range otherwise), adjacent keys merged into one span.
  std::vector<KeyRange> Spans(const TableRows& rows) const;
  // Keys of the dense entries (what every sparse message holds at least).
  int64_t dense_keys() const { return dense_keys_; }
  // The tables' keys, sorted (what hardly travels: see PartitionKeys' light keys).
  std::vector<KeyRange> TableKeys() const;

 private:
  struct Table {
    std::string name;
    int64_t offset = 0, rows = 0, width = 0;
  };
  std::vector<KeyRange> dense_;  // the keys outside the tables, merged
  std::vector<Table> tables_;    // in the caller's order
  int64_t dense_keys_ = 0;
};

}  // namespace tteps
