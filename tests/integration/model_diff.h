// How far apart two saved models are. Declared here without LibTorch so that the integration
// tests, which only compare the models their jobs wrote, compile without it.
#pragma once

#include <cstdint>
#include <string>

namespace tteps::testing_util {

// Largest |a - b| over all parameters of two saved models (model.pt files).
double MaxAbsDiff(const std::string& model_a, const std::string& model_b);

// The parameters' differences in full: the largest, where it is, and how many exceed `above`.
struct ModelDiff {
  double max = 0;
  std::string max_at;  // "name[index]" of the largest
  int64_t elements = 0, above = 0;
};
ModelDiff DiffModels(const std::string& model_a, const std::string& model_b, double above);

}  // namespace tteps::testing_util
