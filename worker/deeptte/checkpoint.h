// model.pt: the weights together with the hyperparameters and normalisation stats, so that
// a saved model can be evaluated with nothing else.
#pragma once

#include <string>

#include "worker/deeptte/deeptte.h"

namespace tteps::deeptte {

// Written to a temporary file and renamed, so a reader never sees half a model.
void SaveModel(DeepTTE& model, const std::string& path);
// Throws std::runtime_error naming the file if it is missing or not a tteps model.
DeepTTE LoadModel(const std::string& path);

}  // namespace tteps::deeptte
