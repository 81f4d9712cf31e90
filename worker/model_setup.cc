#include "worker/model_setup.h"

#include <glog/logging.h>

#include "model/device.h"

namespace tteps {

torch::Device PrepareDevice(const TrainConfig& t) {
  if (t.deterministic) MakeDeterministic();
  const torch::Device device = ResolveDevice(t.device, LocalRank());
  if (!device.is_cpu()) LOG(INFO) << "training on " << device.str();
  return device;
}

deeptte::DeepTTE BuildModel(const JobConfig& c, const data::NormStats& stats,
                            torch::Device device) {
  torch::manual_seed(c.train.seed);
  deeptte::DeepTTE model(c.model, stats);
  model->to(device);
  return model;
}

}  // namespace tteps
