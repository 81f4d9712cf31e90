#include "tests/integration/model_diff.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/deeptte/checkpoint.h"
#include "model/model_params.h"

namespace tteps::testing_util {

ModelDiff DiffModels(const std::string& model_a, const std::string& model_b, double above) {
  auto a = deeptte::LoadModel(model_a);
  auto b = deeptte::LoadModel(model_b);
  const auto pa = a->named_parameters(), pb = b->named_parameters();
  ModelDiff d;
  for (const auto& item : pa) {
    const auto x = item.value().detach().flatten();
    const auto y = pb[item.key()].detach().flatten();
    const auto diff = (x - y).abs();
    d.elements += diff.numel();
    d.above += (diff > above).sum().item<int64_t>();
    if (diff.numel() == 0) continue;
    const int64_t at = diff.argmax().item<int64_t>();
    const double m = diff[at].item<double>();
    if (m > d.max) {
      d.max = m;
      d.max_at = item.key() + "[" + std::to_string(at) + "]";
    }
  }
  return d;
}

double MaxAbsDiff(const std::string& model_a, const std::string& model_b) {
  auto a = deeptte::LoadModel(model_a);
  auto b = deeptte::LoadModel(model_b);
  const auto layout = LayoutOf(*a);
  std::vector<float> fa(layout.total()), fb(layout.total());
  CopyParamsOut(*a, layout, fa.data());
  CopyParamsOut(*b, layout, fb.data());
  double max = 0;
  for (size_t i = 0; i < fa.size(); ++i) max = std::max(max, double(std::abs(fa[i] - fb[i])));
  return max;
}

}  // namespace tteps::testing_util
