#include "model/deeptte/attr_net.h"

#include "model/deeptte/cpu_embedding.h"
#include "model/deeptte/model_config.h"

namespace tteps::deeptte {

AttrNetImpl::AttrNetImpl() {
  driver_em_ = register_module("driverID_em", torch::nn::Embedding(kNumDrivers, 16));
  week_em_ = register_module("weekID_em", torch::nn::Embedding(kNumWeekdays, 3));
  time_em_ = register_module("timeID_em", torch::nn::Embedding(kNumTimeSlots, 8));
}

torch::Tensor AttrNetImpl::forward(const BatchTensors& b) {
  // The distance arrives normalised once by the data pipeline (the public code normalised twice).
  return torch::cat(
      {Embed(driver_em_, b.driver_id, fused_cpu_), Embed(week_em_, b.week_id, fused_cpu_),
       Embed(time_em_, b.time_id, fused_cpu_), b.dist.unsqueeze(1)},
      /*dim=*/1);
}

}  // namespace tteps::deeptte
