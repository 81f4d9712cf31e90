#include "tests/integration/model_diff.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "worker/deeptte/checkpoint.h"
#include "worker/model_params.h"

namespace tteps::testing_util {

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
