// How far apart two saved models are. Declared here without LibTorch so that the integration
// tests, which only compare the models their jobs wrote, compile without it.
#pragma once

#include <string>

namespace tteps::testing_util {

// Largest |a - b| over all parameters of two saved models (model.pt files).
double MaxAbsDiff(const std::string& model_a, const std::string& model_b);

}  // namespace tteps::testing_util
