// The PPO2 loss terms, exposed for tests.
#pragma once

#include <torch/torch.h>

namespace tteps::ppo {

// -mean(min(r A, clip(r, 1 - eps, 1 + eps) A)) with r = exp(log_prob - old_log_prob): the
// clipped surrogate objective, as a loss to minimise.
torch::Tensor ClippedSurrogateLoss(const torch::Tensor& log_prob, const torch::Tensor& old_log_prob,
                                   const torch::Tensor& advantages, double epsilon);

}  // namespace tteps::ppo
