#include "worker/deeptte/batch_tensors.h"

namespace tteps::deeptte {
namespace {

torch::Tensor Wrap(const std::vector<float>& v, at::IntArrayRef shape, torch::Dtype dtype) {
  auto t = torch::from_blob(const_cast<float*>(v.data()), shape, torch::kFloat);
  return dtype == torch::kFloat ? t.clone() : t.to(dtype);
}

torch::Tensor Wrap(const std::vector<int64_t>& v) {
  return torch::from_blob(const_cast<int64_t*>(v.data()), {static_cast<int64_t>(v.size())},
                          torch::kInt64)
      .clone();
}

}  // namespace

BatchTensors ToTensors(const data::PaddedBatch& b, torch::Dtype dtype, torch::Device device) {
  const std::vector<int64_t> seq_shape = {b.size, b.max_len};
  BatchTensors t;
  t.driver_id = Wrap(b.driver_id);
  t.week_id = Wrap(b.week_id);
  t.time_id = Wrap(b.time_id);
  t.dist = Wrap(b.dist, {b.size}, dtype);
  t.label = Wrap(b.time, {b.size}, dtype);
  t.lngs = Wrap(b.lngs, seq_shape, dtype);
  t.lats = Wrap(b.lats, seq_shape, dtype);
  t.states = Wrap(b.states, seq_shape, torch::kFloat).to(torch::kInt64);
  t.time_gap = Wrap(b.time_gap, seq_shape, dtype);
  t.dist_gap = Wrap(b.dist_gap, seq_shape, dtype);
  t.lengths = Wrap(b.lengths);
  if (!device.is_cpu()) {
    for (torch::Tensor* f : {&t.driver_id, &t.week_id, &t.time_id, &t.dist, &t.label, &t.lngs,
                             &t.lats, &t.states, &t.time_gap, &t.dist_gap, &t.lengths}) {
      *f = f->pin_memory().to(device, /*non_blocking=*/true);
    }
  }
  return t;
}

}  // namespace tteps::deeptte
