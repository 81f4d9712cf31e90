#include "model/deeptte/packed_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace tteps::deeptte {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// In eight independent sums, which the compiler keeps in vector registers: one running sum
// would wait on each addition.
float Dot(const float* a, const float* b, int64_t n) {
  float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    for (int k = 0; k < 8; ++k) part[k] += a[j + k] * b[j + k];
  }
  float sum =
      ((part[0] + part[4]) + (part[1] + part[5])) + ((part[2] + part[6]) + (part[3] + part[7]));
  for (; j < n; ++j) sum += a[j] * b[j];
  return sum;
}

// y += s * x.
void Axpy(float s, const float* x, float* y, int64_t n) {
  for (int64_t j = 0; j < n; ++j) y[j] += s * x[j];
}

struct AttentionPool : public torch::autograd::Function<AttentionPool> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& rows,
                               const torch::Tensor& query, const std::vector<int64_t>& active,
                               const std::vector<int64_t>& order) {
    const auto h = rows.contiguous();
    const auto q = query.contiguous();
    const int64_t hidden = h.size(1), batch = static_cast<int64_t>(order.size());
    const std::vector<int64_t> begin = StepBegins(active);
    auto weights = torch::empty({h.size(0)}, h.options());
    auto pooled = torch::zeros({batch, hidden}, h.options());
    const float *hp = h.data_ptr<float>(), *qp = q.data_ptr<float>();
    float *w = weights.data_ptr<float>(), *pp = pooled.data_ptr<float>();
    const int64_t steps = static_cast<int64_t>(active.size());
    for (int64_t r = 0; r < batch; ++r) {
      const float* qb = qp + order[r] * hidden;
      float* pb = pp + order[r] * hidden;
      float top = -std::numeric_limits<float>::infinity();
      for (int64_t t = 0; t < steps && active[t] > r; ++t) {
        const int64_t row = begin[t] + r;
        w[row] = -Dot(hp + row * hidden, qb, hidden);
        top = std::max(top, w[row]);
      }
      float total = 0;
      for (int64_t t = 0; t < steps && active[t] > r; ++t) {
        const int64_t row = begin[t] + r;
        w[row] = std::exp(w[row] - top);
        total += w[row];
      }
      for (int64_t t = 0; t < steps && active[t] > r; ++t) {
        const int64_t row = begin[t] + r;
        w[row] /= total;
        Axpy(w[row], hp + row * hidden, pb, hidden);
      }
    }
    ctx->save_for_backward({h, q, weights, pooled});
    ctx->saved_data["active"] = active;
    ctx->saved_data["order"] = order;
    return pooled;
  }

  // With g_t = <h_t, dP_b> and s_t the score: ds_t = w_t (g_t - <pooled_b, dP_b>) (softmax's
  // backward, as sum_t w_t g_t = <pooled_b, dP_b>); dh_t = w_t dP_b - ds_t q_b (the pooling and
  // the score); dq_b = -sum_t ds_t h_t.
  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    const auto saved = ctx->get_saved_variables();
    const auto &h = saved[0], &q = saved[1], &weights = saved[2], &pooled = saved[3];
    const std::vector<int64_t> active = ctx->saved_data["active"].toIntVector();
    const std::vector<int64_t> order = ctx->saved_data["order"].toIntVector();
    const int64_t hidden = h.size(1), batch = static_cast<int64_t>(order.size());
    const int64_t steps = static_cast<int64_t>(active.size());
    const std::vector<int64_t> begin = StepBegins(active);
    const auto d_pooled =
        grad_out[0].defined() ? grad_out[0].contiguous() : torch::zeros_like(pooled);
    auto dh = torch::empty_like(h);
    auto dq = torch::zeros_like(q);
    const float *hp = h.data_ptr<float>(), *qp = q.data_ptr<float>();
    const float *w = weights.data_ptr<float>(), *pp = pooled.data_ptr<float>();
    const float* dp = d_pooled.data_ptr<float>();
    float *dhp = dh.data_ptr<float>(), *dqp = dq.data_ptr<float>();
    for (int64_t r = 0; r < batch; ++r) {
      const int64_t b = order[r];
      const float *qb = qp + b * hidden, *dpb = dp + b * hidden;
      float* dqb = dqp + b * hidden;
      const float mean_g = Dot(pp + b * hidden, dpb, hidden);
      for (int64_t t = 0; t < steps && active[t] > r; ++t) {
        const int64_t row = begin[t] + r;
        const float* hr = hp + row * hidden;
        float* dhr = dhp + row * hidden;
        const float ds = w[row] * (Dot(hr, dpb, hidden) - mean_g);
        for (int64_t j = 0; j < hidden; ++j) dhr[j] = w[row] * dpb[j] - ds * qb[j];
        Axpy(-ds, hr, dqb, hidden);
      }
    }
    return {dh, dq, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor PackedAttentionPool(const PackedSteps& steps, const torch::Tensor& query) {
  TORCH_CHECK(steps.rows.device().is_cpu() && steps.rows.scalar_type() == torch::kFloat &&
                  query.device().is_cpu() && query.scalar_type() == torch::kFloat,
              "PackedAttentionPool takes float tensors on the CPU");
  TORCH_CHECK(query.dim() == 2 && query.size(0) == static_cast<int64_t>(steps.order.size()) &&
                  query.size(1) == steps.rows.size(1),
              "PackedAttentionPool: query must be [trips, hidden]");
  return AttentionPool::apply(steps.rows, query, steps.active, steps.order);
}

}  // namespace tteps::deeptte
