// Attribute component: driver, weekday and start-time embeddings plus the normalised distance.
#pragma once

#include <torch/torch.h>

#include "model/deeptte/batch_tensors.h"

namespace tteps::deeptte {

class AttrNetImpl : public torch::nn::Module {
 public:
  AttrNetImpl();
  // [B, kAttrSize]
  torch::Tensor forward(const BatchTensors& batch);
  // On the CPU, the lookups of cpu_embedding.h (the default) or LibTorch's.
  void set_fused_cpu(bool on) { fused_cpu_ = on; }

 private:
  torch::nn::Embedding driver_em_{nullptr}, week_em_{nullptr}, time_em_{nullptr};
  bool fused_cpu_ = true;
};
TORCH_MODULE(AttrNet);

}  // namespace tteps::deeptte
