#include "model/deeptte/layout.h"

#include <string>
#include <utility>
#include <vector>

namespace tteps::deeptte {
namespace {

using Tensors = std::vector<std::pair<std::string, std::vector<int64_t>>>;

void Linear(Tensors* t, const std::string& name, int64_t in, int64_t out) {
  t->emplace_back(name + ".weight", std::vector<int64_t>{out, in});
  t->emplace_back(name + ".bias", std::vector<int64_t>{out});
}

void Embedding(Tensors* t, const std::string& name, int64_t rows, int64_t width) {
  t->emplace_back(name + ".weight", std::vector<int64_t>{rows, width});
}

// torch::nn::LSTM: per layer the input and hidden weights, then their biases.
void Lstm(Tensors* t, const std::string& name, int64_t in, int64_t hidden, int layers) {
  for (int l = 0; l < layers; ++l) {
    const std::string s = "_l" + std::to_string(l);
    t->emplace_back(name + ".weight_ih" + s,
                    std::vector<int64_t>{4 * hidden, l == 0 ? in : hidden});
    t->emplace_back(name + ".weight_hh" + s, std::vector<int64_t>{4 * hidden, hidden});
    t->emplace_back(name + ".bias_ih" + s, std::vector<int64_t>{4 * hidden});
    t->emplace_back(name + ".bias_hh" + s, std::vector<int64_t>{4 * hidden});
  }
}

}  // namespace

ParamLayout LayoutFor(const ModelConfig& c) {
  Tensors t;
  Embedding(&t, "attr_net.driverID_em", kNumDrivers, 16);
  Embedding(&t, "attr_net.weekID_em", kNumWeekdays, 3);
  Embedding(&t, "attr_net.timeID_em", kNumTimeSlots, 8);
  const std::string st = "spatio_temporal.";
  Embedding(&t, st + "geo_conv.state_em", 2, 2);
  Linear(&t, st + "geo_conv.process_coords", 4, 16);
  t.emplace_back(st + "geo_conv.conv.weight",
                 std::vector<int64_t>{c.num_filter, 16, c.kernel_size});
  t.emplace_back(st + "geo_conv.conv.bias", std::vector<int64_t>{c.num_filter});
  Lstm(&t, st + "rnn", c.num_filter + 1 + kAttrSize, kHiddenSize, 2);
  if (c.pooling == "attention") Linear(&t, st + "attr2atten", kAttrSize, kHiddenSize);
  Linear(&t, "entire_estimate.input2hid", kAttrSize + kHiddenSize, c.final_fc_size);
  for (int64_t i = 0; i < c.num_final_fcs; ++i) {
    Linear(&t, "entire_estimate.residuals." + std::to_string(i), c.final_fc_size, c.final_fc_size);
  }
  Linear(&t, "entire_estimate.hid2out", c.final_fc_size, 1);
  Linear(&t, "local_estimate.input2hid", kHiddenSize, 64);
  Linear(&t, "local_estimate.hid2hid", 64, 32);
  Linear(&t, "local_estimate.hid2out", 32, 1);
  return ParamLayout(t);
}

}  // namespace tteps::deeptte
