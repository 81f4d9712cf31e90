// Where a file shipped with tteps lies (the sample trips, the PPO policies): under the source
// tree the programs were built from, or, where that tree is absent (a container image, a copy
// of build/bin with the data beside it), under the tree that holds the program: the parent of
// the directory above PROGRAM's (build/bin/PROGRAM -> build/.. ).
#pragma once

#include <string>

namespace tteps {

// `relative` (e.g. "data/chengdu/trajectories.jsonl") under the first root that holds it; the
// source tree's path where neither does (so that an error names where it was expected).
std::string ShippedFile(const std::string& relative);

}  // namespace tteps
