#include "model/deeptte/cpu_lstm.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "model/deeptte/cpu_embedding.h"
#include "model/deeptte/gemm.h"
#include "model/deeptte/lstm_math.h"
#include "model/deeptte/tensor_gemm.h"

namespace tteps::deeptte {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Rows per task when LibTorch runs more than one thread.
constexpr int64_t kRowGrain = 16;

// One LSTM layer over packed inputs (as PackedSequence lays them out). Its input at each step
// is [x, per_trip]: per_trip is the same at every step of a trip, so its part of the input
// projection (and of the gradients) is computed once per trip instead of once per step.
struct LstmLayer : public torch::autograd::Function<LstmLayer> {
  // x: [N, F], N the real steps of all trips, its last data_cols columns without a gradient
  // (CpuLstm); per_trip: [B, P], B the trips (longest first; P may be 0). Returns h: [N, H].
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& per_trip, const torch::Tensor& w_ih,
                               const torch::Tensor& w_hh, const torch::Tensor& b_ih,
                               const torch::Tensor& b_hh, const std::vector<int64_t>& active,
                               int64_t data_cols) {
    const int64_t hidden = w_hh.size(1), gates = 4 * hidden, width = x.size(1);
    const int64_t cols = hidden + width, rows = x.size(0), batch = active.front();
    // Each row's [h_prev, x] side by side (h_prev: the same trip's h at the step before, zero at
    // step 0), so that a step's whole projection is one product of a few rows against
    // [W_hh, W_ih's x columns]^T, packed once (gemm.h); the input projection of all steps at
    // once, in one product, made batch 256's step 5 % longer. The backward pass reuses
    // [h_prev, x] for the weights' gradients.
    auto xh = torch::empty({rows, cols}, x.options());
    float* xp = xh.data_ptr<float>();
    {  // row by row (a copy into a narrowed view took twice as long)
      const auto x_c = x.contiguous();
      const float* xin = x_c.data_ptr<float>();
      for (int64_t r = 0; r < rows; ++r) {
        if (r < batch) std::memset(xp + r * cols, 0, hidden * sizeof(float));
        std::memcpy(xp + r * cols + hidden, xin + r * width, width * sizeof(float));
      }
    }
    // [W_hh, W_ih's x columns]^T packed once for all steps (gemm.h).
    const auto w_hh_c = w_hh.contiguous(), w_ih_c = w_ih.contiguous();
    gemm::PackedMatrix w_cat;
    w_cat.Resize(cols, gates);
    w_cat.Fill(/*trans_b=*/true, 0, hidden, w_hh_c.data_ptr<float>(), hidden);
    w_cat.Fill(/*trans_b=*/true, hidden, width, w_ih_c.data_ptr<float>(), w_ih.size(1));
    // The trips' part of the projection and the biases, added per step by the cell.
    const auto trip_part =
        AddMm(b_ih + b_hh, per_trip, false, w_ih.narrow(1, width, per_trip.size(1)), true);
    const float* tr = trip_part.data_ptr<float>();
    auto acts = torch::empty({rows, gates}, x.options());
    auto c = torch::empty({rows, hidden}, x.options());
    auto tanh_c = torch::empty_like(c);
    auto h = torch::empty_like(c);
    float* a = acts.data_ptr<float>();
    float* cp = c.data_ptr<float>();
    float* tp = tanh_c.data_ptr<float>();
    float* hp = h.data_ptr<float>();
    const std::vector<int64_t> begin = StepBegins(active);
    const auto& cell = lstm_math::ActiveCellKernels();
    for (size_t t = 0; t < active.size(); ++t) {
      const int64_t n = active[t], prev = t > 0 ? begin[t - 1] : 0;
      const int64_t next_n = t + 1 < active.size() ? active[t + 1] : 0;
      // At step 0 h_prev is zero: the product skips its columns.
      const int64_t skip = t > 0 ? 0 : hidden;
      w_cat.LeftMultiply(false, n, xp + begin[t] * cols + skip, cols, a + begin[t] * gates, gates,
                         /*accumulate=*/false, /*first_row=*/skip);
      at::parallel_for(0, n, kRowGrain, [&](int64_t from, int64_t to) {
        for (int64_t r = from; r < to; ++r) {
          const int64_t row = begin[t] + r;
          cell.forward(a + row * gates, tr + r * gates, t > 0 ? cp + (prev + r) * hidden : nullptr,
                       cp + row * hidden, tp + row * hidden, hp + row * hidden,
                       r < next_n ? xp + (begin[t + 1] + r) * cols : nullptr, hidden);
        }
      });
    }
    ctx->save_for_backward({xh, per_trip, w_ih, w_hh, acts, c, tanh_c, h});
    ctx->saved_data["active"] = active;
    ctx->saved_data["data_cols"] = data_cols;
    return h;
  }

  // One piece, as a numeric kernel: the step loop interleaves the cell's pass with the weights'
  // products over blocks of rows still in cache, through buffers (the block of dG and its packed
  // copy, the unsummed range, dc) that both use; split, they would travel as a dozen arguments.
  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    const auto saved = ctx->get_saved_variables();
    const auto &xh = saved[0], &per_trip = saved[1], &w_ih = saved[2], &w_hh = saved[3];
    const auto &acts = saved[4], &c = saved[5], &tanh_c = saved[6], &h = saved[7];
    const std::vector<int64_t> active = ctx->saved_data["active"].toIntVector();
    const int64_t hidden = w_hh.size(1), gates = 4 * hidden, batch = active.front();
    const std::vector<int64_t> begin = StepBegins(active);
    // The gradient reaching h, read in place row by row: the next layer's is a view of the
    // gradients of its [h_prev, x] (x's columns), which a contiguous copy would move (1 MB).
    auto grad_h = grad_out[0].defined() ? grad_out[0] : torch::zeros_like(h);
    if (grad_h.stride(1) != 1 || grad_h.stride(0) < hidden) grad_h = grad_h.contiguous();
    const int64_t gh_stride = grad_h.stride(0);
    const int64_t rows = xh.size(0), cols = xh.size(1), width = cols - hidden;
    const int64_t steps = static_cast<int64_t>(active.size());
    const int64_t grad_width = width - ctx->saved_data["data_cols"].toInt();
    // The gates' gradients live only until the weights' product of their block below: they
    // go into a buffer of a block's rows (plus a step's), which stays in cache, instead of an
    // array of all rows that the cell's pass would write out to memory and read back.
    constexpr int64_t kWeightBlock = 256;  // rows of dG per product (512 KB)
    const int64_t capacity = kWeightBlock + batch;
    auto d_gates = torch::empty({capacity, gates}, xh.options());
    // Per step, the gradient reaching each row's [h_prev, x]: dG against W_hh and against W_ih's
    // x columns (the matrices the forward pass multiplied, untransposed), each packed once.
    // h_prev's part feeds the step before, x's is the input's gradient (its data columns none).
    auto d_hx = torch::empty({rows, cols}, xh.options());
    const auto w_hh_c = w_hh.contiguous(), w_ih_c = w_ih.contiguous();
    const gemm::PackedMatrix w_hh_packed(false, gates, hidden, w_hh_c.data_ptr<float>(), hidden);
    const gemm::PackedMatrix w_ih_packed(false, gates, grad_width, w_ih_c.data_ptr<float>(),
                                         w_ih.size(1));
    // The weights' gradients, transposed: dW^T += [h_prev, x]^T dG over blocks of consecutive
    // steps' rows while their dG is still in cache (the same product over all rows at the end
    // reads them back from memory); each block's dG is packed once for both parts.
    gemm::PackedMatrix dg_packed;
    auto dw_t = torch::empty({cols, gates}, xh.options());
    auto dc = torch::zeros({batch, hidden}, xh.options());           // reaching c_t from step t + 1
    auto per_trip_sum = torch::zeros({batch, gates}, xh.options());  // d_gates summed per trip
    const float *a = acts.data_ptr<float>(), *cp = c.data_ptr<float>();
    const float *tp = tanh_c.data_ptr<float>(), *gh = grad_h.data_ptr<float>();
    const float* xp = xh.data_ptr<float>();
    float *dg = d_gates.data_ptr<float>(), *dhx = d_hx.data_ptr<float>();
    float *dcp = dc.data_ptr<float>(), *dwt = dw_t.data_ptr<float>();
    float* sum = per_trip_sum.data_ptr<float>();
    const auto& cell = lstm_math::ActiveCellKernels();
    // The rows of dG from begin[t] to here are not in the weights' gradients yet.
    int64_t unsummed_end = rows;
    // Row `row`'s gates' gradient in the buffer: the unsummed rows end at its end.
    const auto Dg = [&](int64_t row) { return dg + (row - unsummed_end + capacity) * gates; };
    for (int64_t t = steps - 1; t >= 0; --t) {
      const int64_t n = active[t], next_n = t + 1 < steps ? active[t + 1] : 0;
      at::parallel_for(0, n, kRowGrain, [&](int64_t from, int64_t to) {
        for (int64_t r = from; r < to; ++r) {
          const int64_t row = begin[t] + r;
          // A row whose trip ended at step t gets no gradient from step t + 1.
          cell.backward(a + row * gates, t > 0 ? cp + (begin[t - 1] + r) * hidden : nullptr,
                        tp + row * hidden, gh + row * gh_stride,
                        r < next_n ? dhx + (begin[t + 1] + r) * cols : nullptr, dcp + r * hidden,
                        Dg(row), sum + r * gates, hidden);
        }
      });
      // At step 0, h_prev was zero: only x's part.
      float* dhx_t = dhx + begin[t] * cols;
      if (t > 0) w_hh_packed.LeftMultiply(false, n, Dg(begin[t]), gates, dhx_t, cols, false);
      w_ih_packed.LeftMultiply(false, n, Dg(begin[t]), gates, dhx_t + hidden, cols, false);
      for (int64_t r = 0; r < n && grad_width < width; ++r) {
        std::fill(dhx_t + r * cols + hidden + grad_width, dhx_t + (r + 1) * cols, 0.0f);
      }
      if (unsummed_end - begin[t] >= kWeightBlock || t == 0) {
        const int64_t k = unsummed_end - begin[t];
        const bool accumulate = unsummed_end != rows;
        dg_packed.Resize(k, gates);
        dg_packed.Fill(false, 0, k, Dg(begin[t]), gates);
        // [h_prev, x]^T of the block's rows: the rows' matrix read transposed in place. Step 0's
        // rows (the first `batch` of the last block) have h_prev = 0: W_hh's part leaves them
        // out.
        const float* block = xp + begin[t] * cols;
        const int64_t zero_rows = t == 0 ? batch : 0;
        if (zero_rows == 0) {
          dg_packed.LeftMultiply(true, cols, block, cols, dwt, gates, accumulate);
        } else {
          dg_packed.LeftMultiply(true, hidden, block + zero_rows * cols, cols, dwt, gates,
                                 accumulate, zero_rows);
          dg_packed.LeftMultiply(true, width, block + hidden, cols, dwt + hidden * gates, gates,
                                 accumulate);
        }
        unsummed_end = begin[t];
      }
    }
    auto dw_hh = torch::empty_like(w_hh_c);
    gemm::Transpose(dwt, hidden, gates, dw_hh.data_ptr<float>());
    const int64_t ih_cols = w_ih.size(1);  // F + P
    auto dw_ih = torch::empty({gates, ih_cols}, xh.options());
    gemm::Transpose(dwt + hidden * gates, width, gates, dw_ih.data_ptr<float>(), ih_cols);
    auto dx = d_hx.narrow(1, hidden, width);
    const auto w_trip = w_ih.narrow(1, width, per_trip.size(1));
    auto d_per_trip = Mm(per_trip_sum, false, w_trip, false);
    if (per_trip.size(1) > 0) {
      dw_ih.narrow(1, width, per_trip.size(1)).copy_(Mm(per_trip_sum, true, per_trip, false));
    }
    auto db = per_trip_sum.sum(0);
    return {dx, d_per_trip, dw_ih, dw_hh, db, db.clone(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

std::vector<int64_t> StepBegins(const std::vector<int64_t>& active) {
  std::vector<int64_t> begin(active.size() + 1, 0);
  for (size_t t = 0; t < active.size(); ++t) begin[t + 1] = begin[t] + active[t];
  return begin;
}

PackedSteps PackSteps(const torch::Tensor& lengths, int64_t steps) {
  const int64_t batch = lengths.size(0);
  auto sorted = lengths.sort(/*stable=*/true, /*dim=*/0, /*descending=*/true);
  const auto len = std::get<0>(sorted).contiguous();
  const auto order = std::get<1>(sorted).contiguous();
  const int64_t* lp = len.data_ptr<int64_t>();
  const int64_t* op = order.data_ptr<int64_t>();
  TORCH_CHECK(batch > 0 && lp[batch - 1] >= 1 && lp[0] <= steps, "CpuLstm: lengths out of range");
  PackedSteps out;
  out.order.assign(op, op + batch);
  out.active.assign(lp[0], 0);
  std::vector<int64_t> where, trip;
  for (int64_t t = 0, n = batch; t < lp[0]; ++t) {
    while (lp[n - 1] <= t) --n;
    out.active[t] = n;
    for (int64_t r = 0; r < n; ++r) {
      where.push_back(op[r] * steps + t);
      trip.push_back(op[r]);
    }
  }
  out.padded_index = torch::tensor(where, torch::kLong);
  out.trip = torch::tensor(trip, torch::kLong);
  return out;
}

void CpuLstmOnPacked(const torch::nn::LSTM& rnn, const torch::Tensor& packed_inputs,
                     const torch::Tensor& per_trip, int64_t data_cols, PackedSteps& steps) {
  const auto& o = rnn->options;
  TORCH_CHECK(o.batch_first() && o.bias() && !o.bidirectional() && o.dropout() == 0.0,
              "CpuLstm runs a batch-first, biased, one-way LSTM without dropout");
  TORCH_CHECK(packed_inputs.device().is_cpu() && packed_inputs.scalar_type() == torch::kFloat &&
                  packed_inputs.dim() == 2 && packed_inputs.size(0) == steps.trip.numel(),
              "CpuLstm takes float inputs on the CPU, one row per real step");
  TORCH_CHECK(data_cols >= 0 && data_cols <= packed_inputs.size(1),
              "CpuLstm: data_cols out of range");
  const auto params = rnn->named_parameters();
  const auto order = torch::tensor(steps.order, torch::kLong);
  const auto none = torch::empty({per_trip.size(0), 0}, packed_inputs.options());
  auto x = packed_inputs;
  for (int64_t l = 0; l < o.num_layers(); ++l) {
    const std::string k = std::to_string(l);
    x = LstmLayer::apply(x, l == 0 ? per_trip.index_select(0, order) : none,
                         params["weight_ih_l" + k], params["weight_hh_l" + k],
                         params["bias_ih_l" + k], params["bias_hh_l" + k], steps.active,
                         l == 0 ? data_cols : 0);
  }
  steps.rows = x;
}

PackedSteps CpuLstmPacked(const torch::nn::LSTM& rnn, const torch::Tensor& inputs,
                          const torch::Tensor& per_trip, const torch::Tensor& lengths,
                          int64_t data_cols) {
  TORCH_CHECK(inputs.device().is_cpu() && inputs.scalar_type() == torch::kFloat,
              "CpuLstm takes float inputs on the CPU");
  const int64_t batch = inputs.size(0), steps = inputs.size(1);
  PackedSteps out = PackSteps(lengths, steps);
  // The rows as an embedding lookup: its backward adds each row's gradient back in a plain
  // loop (index_select's adds them with index_add, a TensorIterator per row).
  const auto x = CpuEmbedding(inputs.reshape({batch * steps, inputs.size(2)}), out.padded_index);
  CpuLstmOnPacked(rnn, x, per_trip, data_cols, out);
  return out;
}

torch::Tensor CpuLstm(const torch::nn::LSTM& rnn, const torch::Tensor& inputs,
                      const torch::Tensor& per_trip, const torch::Tensor& lengths,
                      int64_t data_cols) {
  const auto p = CpuLstmPacked(rnn, inputs, per_trip, lengths, data_cols);
  const int64_t batch = inputs.size(0), steps = inputs.size(1), hidden = p.rows.size(1);
  return torch::zeros({batch * steps, hidden}, p.rows.options())
      .index_copy(0, p.padded_index, p.rows)
      .view({batch, steps, hidden});
}

}  // namespace tteps::deeptte
