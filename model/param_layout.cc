#include "model/param_layout.h"

#include <cstdio>

namespace tteps {
namespace {

constexpr uint64_t kFnvOffset = 14695981039346656037ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

void Mix(uint64_t* h, const void* data, size_t n) {
  auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    *h ^= p[i];
    *h *= kFnvPrime;
  }
}

}  // namespace

ParamLayout::ParamLayout(const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors) {
  uint64_t h = kFnvOffset;
  for (const auto& [name, shape] : tensors) {
    ParamEntry e;
    e.name = name;
    e.shape = shape;
    e.offset = total_;
    e.numel = 1;
    for (int64_t d : shape) e.numel *= d;
    total_ += e.numel;
    entries_.push_back(e);
    Mix(&h, name.data(), name.size() + 1);  // include the terminator: "ab"+"c" != "a"+"bc"
    const int64_t rank = static_cast<int64_t>(shape.size());
    Mix(&h, &rank, sizeof rank);
    Mix(&h, shape.data(), shape.size() * sizeof(int64_t));
  }
  fingerprint_ = h;
}

std::string ParamLayout::Describe() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%zu tensors, %lld floats (%.2f MB), fingerprint %016llx",
                entries_.size(), static_cast<long long>(total_), total_ * 4.0 / 1e6,
                static_cast<unsigned long long>(fingerprint_));
  return buf;
}

std::vector<ModuleRun> ModuleRuns(const ParamLayout& layout,
                                  const std::vector<std::string>& modules) {
  const auto& entries = layout.entries();
  std::vector<ModuleRun> runs;
  size_t at = 0;
  for (const std::string& m : modules) {
    const std::string prefix = m + ".";
    ModuleRun r;
    r.first = at;
    while (at < entries.size() && entries[at].name.compare(0, prefix.size(), prefix) == 0) ++at;
    r.end = at;
    if (r.end == r.first) return {};
    r.keys = {entries[r.first].offset, entries[r.end - 1].offset + entries[r.end - 1].numel};
    runs.push_back(r);
  }
  if (at != entries.size()) return {};
  return runs;
}

}  // namespace tteps
