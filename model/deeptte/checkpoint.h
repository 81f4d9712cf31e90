// model.pt: the weights together with the hyperparameters and normalisation stats, so that
// a saved model can be evaluated with nothing else.
#pragma once

#include <cstdint>
#include <string>

#include "model/deeptte/deeptte.h"

namespace tteps::deeptte {

// Written to a temporary file and renamed, so a reader never sees half a model.
void SaveModel(DeepTTE& model, const std::string& path);
// The same, marked as format version `format`: for the tests that another version is refused.
void SaveModelAsFormat(DeepTTE& model, const std::string& path, uint32_t format);
// Throws std::runtime_error naming the file if it is missing, not a tteps model, or a model of
// another format version (naming both versions). A model saved from a GPU loads anywhere: the
// weights are read onto the CPU, then moved to `device`.
DeepTTE LoadModel(const std::string& path, torch::Device device = torch::kCPU);

}  // namespace tteps::deeptte
