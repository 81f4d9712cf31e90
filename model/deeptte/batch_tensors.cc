#include "model/deeptte/batch_tensors.h"

#include <algorithm>
#include <cstring>

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

BatchTensors OnCpu(const data::PaddedBatch& b, torch::Dtype dtype) {
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
  return t;
}

// Packs the vectors one after another into `staging` (pinned host memory) from `at`.
template <typename T>
void Put(const std::vector<T>& v, T* staging, int64_t& at) {
  std::memcpy(staging + at, v.data(), v.size() * sizeof(T));
  at += static_cast<int64_t>(v.size());
}

// A GPU batch crosses in two copies (the int64 and the float fields, each packed into one
// pinned staging buffer) instead of eleven, without waiting for them: the caching host
// allocator keeps each staging block until its copy has completed. The fields are views of
// the two device tensors.
BatchTensors OnDevice(const data::PaddedBatch& b, torch::Dtype dtype, torch::Device device) {
  const int64_t n = b.size, seq = b.size * b.max_len;
  auto pinned = [](int64_t count, torch::Dtype type) {
    return torch::empty({count}, torch::TensorOptions().dtype(type).pinned_memory(true));
  };
  auto ints = pinned(4 * n, torch::kInt64);
  int64_t at = 0;
  for (const auto* v : {&b.driver_id, &b.week_id, &b.time_id, &b.lengths}) {
    Put(*v, ints.data_ptr<int64_t>(), at);
  }
  auto floats = pinned(2 * n + 5 * seq, torch::kFloat);
  at = 0;
  for (const auto* v : {&b.dist, &b.time, &b.lngs, &b.lats, &b.states, &b.time_gap, &b.dist_gap}) {
    Put(*v, floats.data_ptr<float>(), at);
  }
  const auto on_device = torch::TensorOptions().device(device);
  auto i = ints.to(on_device, /*non_blocking=*/true);
  auto f = floats.to(on_device, /*non_blocking=*/true);
  BatchTensors t;
  t.driver_id = i.narrow(0, 0, n);
  t.week_id = i.narrow(0, n, n);
  t.time_id = i.narrow(0, 2 * n, n);
  t.lengths = i.narrow(0, 3 * n, n);
  const auto cast = [dtype](const torch::Tensor& x) {
    return x.scalar_type() == dtype ? x : x.to(dtype);
  };
  t.dist = cast(f.narrow(0, 0, n));
  t.label = cast(f.narrow(0, n, n));
  const auto sequence = [&](int k) {
    return f.narrow(0, 2 * n + k * seq, seq).view({n, b.max_len});
  };
  t.lngs = cast(sequence(0));
  t.lats = cast(sequence(1));
  t.states = sequence(2).to(torch::kInt64);
  t.time_gap = cast(sequence(3));
  t.dist_gap = cast(sequence(4));
  return t;
}

}  // namespace

BatchTensors ToTensors(const data::PaddedBatch& b, torch::Dtype dtype, torch::Device device) {
  BatchTensors t = device.is_cpu() ? OnCpu(b, dtype) : OnDevice(b, dtype, device);
  t.min_length = b.lengths.empty() ? 0 : *std::min_element(b.lengths.begin(), b.lengths.end());
  return t;
}

}  // namespace tteps::deeptte
