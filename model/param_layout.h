// The model's parameters as one flat float vector: ordered named tensors with shapes and
// offsets, and a fingerprint of names and shapes so peers with another model are refused.
// Torch-free: servers, the ring backend and checkpoints use it; model/model_params.h fills it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/key_range.h"

namespace tteps {

struct ParamEntry {
  std::string name;
  std::vector<int64_t> shape;
  int64_t offset = 0;  // in floats, into the flat vector
  int64_t numel = 0;
};

class ParamLayout {
 public:
  ParamLayout() = default;
  // Entries are laid out back to back in the given order.
  explicit ParamLayout(const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors);

  const std::vector<ParamEntry>& entries() const { return entries_; }
  int64_t total() const { return total_; }
  // FNV-1a 64 over every name and shape, in order.
  uint64_t fingerprint() const { return fingerprint_; }
  // "N tensors, M floats (X MB), fingerprint 0x..."
  std::string Describe() const;

 private:
  std::vector<ParamEntry> entries_;
  int64_t total_ = 0;
  uint64_t fingerprint_ = 0;
};

// The parameters of one module: entries [first, end) of a layout, keys `keys`.
struct ModuleRun {
  size_t first = 0, end = 0;
  KeyRange keys;
};
// The runs of the named modules (entries named "module.*"), in the order given. Empty when
// they are not back to back in that order, covering the whole layout: a caller that would
// take the model's parameters module by module then takes them whole instead.
std::vector<ModuleRun> ModuleRuns(const ParamLayout& layout,
                                  const std::vector<std::string>& modules);

}  // namespace tteps
