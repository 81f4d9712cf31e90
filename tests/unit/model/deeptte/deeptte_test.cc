// DeepTTE model: shapes, masking, local labels, gradients, layout, save/load and evaluation.
#include "model/deeptte/deeptte.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "common/file_formats.h"
#include "model/data/padded_batch.h"
#include "model/deeptte/checkpoint.h"
#include "model/deeptte/embedding_rows.h"
#include "model/deeptte/geo_conv.h"
#include "model/deeptte/layout.h"
#include "model/evaluator.h"
#include "model/model_params.h"
#include "model/row_spans.h"
#include "tests/unit/model/deeptte/test_trips.h"
#include "worker/exchange/gradient_hooks.h"
#include "worker/grad_buckets.h"
#include "worker/gradient_step.h"

namespace tteps {
namespace {

using deeptte::BatchTensors;
using deeptte::DeepTTE;
using deeptte::ModelConfig;
using testing_util::SampleSlice;
using testing_util::SampleStats;
using testing_util::SampleTrips;

BatchTensors Batch(const std::vector<size_t>& idx, torch::Dtype dtype = torch::kFloat) {
  return deeptte::ToTensors(data::MakeBatch(SampleTrips(), idx, SampleStats()), dtype);
}

DeepTTE MakeModel(ModelConfig c = {}, uint64_t seed = 7) {
  torch::manual_seed(seed);
  return DeepTTE(c, SampleStats());
}

// Indices of sample trips with pairwise different lengths, shortest first.
std::vector<size_t> MixedLengths(size_t n) {
  std::vector<size_t> idx(SampleTrips().size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(),
            [](size_t a, size_t b) { return SampleTrips().length(a) < SampleTrips().length(b); });
  std::vector<size_t> out = {idx.front()};
  for (size_t i : idx) {
    if (out.size() == n) break;
    if (SampleTrips().length(i) > SampleTrips().length(out.back()) + 5) out.push_back(i);
  }
  return out;
}

TEST(DeepTTE, OutputShapesForMixedLengthsAndBatchOfOne) {
  for (const std::string pooling : {"attention", "mean"}) {
    ModelConfig c;
    c.pooling = pooling;
    auto model = MakeModel(c);
    auto idx = MixedLengths(5);
    auto b = Batch(idx);
    auto pred = model->PredictSeconds(b);
    EXPECT_EQ(pred.sizes(), torch::IntArrayRef({5})) << pooling;
    EXPECT_TRUE(torch::isfinite(pred).all().item<bool>());
    auto loss = model->Loss(b);
    EXPECT_EQ(loss.total.dim(), 0);
    EXPECT_TRUE(std::isfinite(loss.total.item<double>()));

    auto one = Batch({idx[2]});
    EXPECT_EQ(model->PredictSeconds(one).sizes(), torch::IntArrayRef({1})) << pooling;
    EXPECT_TRUE(std::isfinite(model->Loss(one).total.item<double>()));
  }
}

TEST(DeepTTE, PaddingDoesNotChangeATripsPrediction) {
  // A short trip alone and in a batch whose longest trip forces heavy padding.
  for (const std::string pooling : {"attention", "mean"}) {
    ModelConfig c;
    c.pooling = pooling;
    auto model = MakeModel(c);
    torch::NoGradGuard no_grad;
    auto idx = MixedLengths(4);
    auto alone = model->PredictSeconds(Batch({idx[0]}));
    auto padded = model->PredictSeconds(Batch({idx[3], idx[0], idx[1]}));
    EXPECT_NEAR(alone[0].item<double>(), padded[1].item<double>(), 1e-3) << pooling;
  }
}

// model->set_pad_multiple(n) pads a batch's sequences to a multiple of n (fewer shapes for a
// GPU): the predictions and the loss stay those of the tightly padded batch.
TEST(DeepTTE, APadMultipleKeepsThePredictionsAndTheLoss) {
  const auto idx = MixedLengths(4);
  const auto batch = data::MakeBatch(SampleTrips(), idx, SampleStats(), 32);
  EXPECT_EQ(batch.max_len % 32, 0);
  EXPECT_GT(batch.max_len, data::MakeBatch(SampleTrips(), idx, SampleStats()).max_len);
  auto model = MakeModel();
  torch::NoGradGuard no_grad;
  const auto tight = deeptte::ToTensors(data::MakeBatch(SampleTrips(), idx, SampleStats()));
  const auto padded = deeptte::ToTensors(batch);
  EXPECT_TRUE(
      torch::allclose(model->PredictSeconds(tight), model->PredictSeconds(padded), 1e-5, 1e-4));
  EXPECT_NEAR(model->Loss(tight).total.item<double>(), model->Loss(padded).total.item<double>(),
              1e-5 * model->Loss(tight).total.item<double>());
}

TEST(DeepTTE, LocalPathDeltaOnHandExample) {
  // Two trips, the second padded with zeros; k = 3: value[i + 2] - value[i].
  auto seq = torch::tensor({0.f, 10.f, 25.f, 45.f, 70.f, 0.f, 3.f, 9.f, 0.f, 0.f}).view({2, 5});
  auto d = deeptte::LocalPathDelta(seq, 3);
  ASSERT_EQ(d.sizes(), torch::IntArrayRef({2, 3}));
  EXPECT_FLOAT_EQ(d[0][0].item<float>(), 25.f);
  EXPECT_FLOAT_EQ(d[0][1].item<float>(), 35.f);
  EXPECT_FLOAT_EQ(d[0][2].item<float>(), 45.f);
  EXPECT_FLOAT_EQ(d[1][0].item<float>(), 9.f);  // the only real local path of trip 2
}

TEST(DeepTTE, LocalLossOnHandExample) {
  // Trip 1: time gaps 0, 10, 25, 45 s -> local paths (k = 3) of 25 and 35 s.
  // Trip 2: time gaps 0, 3, 9 s (padded) -> one local path of 9 s.
  auto gaps = torch::tensor({0., 10., 25., 45., 0., 3., 9., 0.}, torch::kDouble).view({2, 4});
  auto label = deeptte::LocalPathDelta(gaps, 3);
  auto mask = torch::tensor({true, true, true, false}).view({2, 2});
  auto pred = torch::tensor({30., 30., 19., 1000.}, torch::kDouble).view({2, 2});
  // Trip 1: (5/35 + 5/45) / 2; trip 2: 10/19; the padded prediction is ignored.
  const double expected = ((5.0 / 35 + 5.0 / 45) / 2 + 10.0 / 19) / 2;
  EXPECT_NEAR(deeptte::LocalPathLoss(pred, label, mask).item<double>(), expected, 1e-12);
}

TEST(DeepTTE, LossIsMeanOfPerTripLosses) {
  // The loss of a batch equals the trip-weighted mean of the losses of its parts: what makes
  // gradient accumulation and sample-weighted worker averaging exact.
  auto model = MakeModel();
  torch::NoGradGuard no_grad;
  auto idx = MixedLengths(5);
  const double whole = model->Loss(Batch(idx)).total.item<double>();
  const double a = model->Loss(Batch({idx[0], idx[1]})).total.item<double>();
  const double b = model->Loss(Batch({idx[2], idx[3], idx[4]})).total.item<double>();
  EXPECT_NEAR(whole, (2 * a + 3 * b) / 5, 1e-5);
}

// On the CPU in float the local paths' windows are our own autograd node (geo_conv.cc); in
// double LibTorch's unfold. Both give the same outputs and gradients (to float rounding).
TEST(DeepTTE, GeoConvWindowsEqualUnfoldInDouble) {
  torch::manual_seed(3);
  deeptte::GeoConv conv(3, 32);
  torch::manual_seed(3);
  deeptte::GeoConv conv_d(3, 32);  // the same initial values, in double
  conv_d->to(torch::kDouble);
  const auto idx = MixedLengths(4);
  const auto b = Batch(idx), b_d = Batch(idx, torch::kDouble);
  const int64_t paths = b.lngs.size(1) - 2;
  const auto dist = torch::rand({b.lngs.size(0), paths}, torch::kDouble);
  const auto weights = torch::randn({b.lngs.size(0), paths, 33}, torch::kDouble);
  (conv(b, dist.to(torch::kFloat)) * weights.to(torch::kFloat)).sum().backward();
  (conv_d->forward(b_d, dist) * weights).sum().backward();
  const auto out = conv(b, dist.to(torch::kFloat)).to(torch::kDouble);
  const auto out_d = conv_d->forward(b_d, dist);
  EXPECT_LT((out - out_d).abs().max().item<double>(), 1e-5 * out_d.abs().max().item<double>());
  const auto params = conv->named_parameters(), params_d = conv_d->named_parameters();
  for (const auto& key : params.keys()) {
    const auto g = params[key].grad().to(torch::kDouble), g_d = params_d[key].grad();
    EXPECT_LT((g - g_d).abs().max().item<double>(), 1e-5 * g_d.abs().max().item<double>()) << key;
  }
}

TEST(DeepTTE, GradientMatchesFiniteDifferencesInDouble) {
  ModelConfig c;
  c.num_filter = 4;
  c.final_fc_size = 8;
  c.num_final_fcs = 1;
  auto model = MakeModel(c);
  model->to(torch::kDouble);
  auto idx = MixedLengths(3);
  auto b = Batch(idx, torch::kDouble);
  model->zero_grad();
  model->Loss(b).total.backward();

  torch::NoGradGuard no_grad;
  torch::manual_seed(1);
  int checked = 0;
  for (auto& p : model->named_parameters()) {
    auto param = p.value();
    auto grad = param.grad();
    ASSERT_TRUE(grad.defined()) << p.key();
    auto flat = param.view(-1);
    auto gflat = grad.view(-1);
    // Probe the entries with the largest gradient (embedding rows in use) and a random one.
    std::vector<int64_t> probes = {gflat.abs().argmax().item<int64_t>(),
                                   torch::randint(flat.size(0), {1}).item<int64_t>()};
    for (int64_t i : probes) {
      const double eps = 1e-6, orig = flat[i].item<double>();
      flat[i] = orig + eps;
      const double up = model->Loss(b).total.item<double>();
      flat[i] = orig - eps;
      const double down = model->Loss(b).total.item<double>();
      flat[i] = orig;
      const double numeric = (up - down) / (2 * eps);
      const double analytic = gflat[i].item<double>();
      EXPECT_NEAR(analytic, numeric, 1e-6 + 1e-4 * std::abs(numeric)) << p.key() << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_GT(checked, 30);
}

// The torch-free layout (simulated workers register with it) is the model's own: the same
// names, shapes, order and fingerprint, whatever the hyperparameters.
TEST(ParamLayout, TheTorchFreeLayoutIsTheModels) {
  ModelConfig small;
  small.kernel_size = 2;
  small.num_filter = 8;
  small.pooling = "mean";
  small.num_final_fcs = 1;
  small.final_fc_size = 32;
  for (const ModelConfig& c : {ModelConfig{}, small}) {
    const ParamLayout want = LayoutOf(*MakeModel(c));
    const ParamLayout got = deeptte::LayoutFor(c);
    ASSERT_EQ(got.entries().size(), want.entries().size()) << want.Describe();
    for (size_t i = 0; i < want.entries().size(); ++i) {
      EXPECT_EQ(got.entries()[i].name, want.entries()[i].name) << i;
      EXPECT_EQ(got.entries()[i].shape, want.entries()[i].shape) << want.entries()[i].name;
    }
    EXPECT_EQ(got.total(), want.total());
    EXPECT_EQ(got.fingerprint(), want.fingerprint());
  }
}

TEST(ParamLayout, RoundTripAndFingerprint) {
  auto model = MakeModel();
  auto layout = LayoutOf(*model);
  EXPECT_EQ(layout.entries().front().offset, 0);
  int64_t total = 0;
  for (auto& p : model->parameters()) total += p.numel();
  EXPECT_EQ(layout.total(), total);

  std::vector<float> flat(layout.total());
  CopyParamsOut(*model, layout, flat.data());
  auto other = MakeModel({}, /*seed=*/99);
  std::vector<float> before(layout.total());
  CopyParamsOut(*other, layout, before.data());
  ASSERT_NE(before, flat);
  CopyParamsIn(*other, layout, flat.data());
  std::vector<float> after(layout.total());
  CopyParamsOut(*other, layout, after.data());
  EXPECT_EQ(after, flat);

  // Gradients: out and back in.
  model->Loss(Batch({0, 1})).total.backward();
  std::vector<float> grads(layout.total());
  CopyGradsOut(*model, layout, grads.data());
  CopyGradsIn(*other, layout, grads.data());
  std::vector<float> grads2(layout.total());
  CopyGradsOut(*other, layout, grads2.data());
  EXPECT_EQ(grads, grads2);

  // Same shapes: same fingerprint. One shape changed: another fingerprint.
  EXPECT_EQ(LayoutOf(*other).fingerprint(), layout.fingerprint());
  ModelConfig wider;
  wider.num_filter = 33;
  auto changed = MakeModel(wider);
  EXPECT_NE(LayoutOf(*changed).fingerprint(), layout.fingerprint());
  EXPECT_THROW(CopyParamsIn(*changed, layout, flat.data()), std::invalid_argument);
}

// The parameter-server exchange lets a forward pass start before every weight arrived: it
// awaits each block where the forward first reads it. Model: every parameter zero until its
// block's gate runs; the loss and gradient must be those of the whole model.
TEST(DeepTTE, EachBlockGateRunsBeforeItsParametersAreRead) {
  auto model = MakeModel();
  const ParamLayout layout = LayoutOf(*model);
  const auto runs = ModuleRuns(layout, deeptte::DeepTTEImpl::ForwardBlocks());
  ASSERT_EQ(runs.size(), deeptte::DeepTTEImpl::ForwardBlocks().size())
      << "the forward blocks are not the layout's modules in order";
  std::vector<float> weights(layout.total()), zeros(layout.total(), 0.f);
  CopyParamsOut(*model, layout, weights.data());
  const auto batch = Batch(MixedLengths(6));
  const double expected = model->Loss(batch).total.item<double>();

  CopyParamsIn(*model, layout, zeros.data());
  std::vector<int> calls;
  model->set_block_gate([&](int b) {
    calls.push_back(b);
    CopyParamsIn(*model, layout, weights.data(), runs[b].first, runs[b].end);
  });
  const double gated = model->Loss(batch).total.item<double>();
  EXPECT_EQ(gated, expected);
  EXPECT_EQ(calls, (std::vector<int>{0, 1, 2, 3}));
  model->set_block_gate({});
}

TEST(Checkpoint, SaveLoadGivesIdenticalPredictions) {
  ModelConfig c;
  c.pooling = "mean";
  c.local_loss_weight = 0.3;
  auto model = MakeModel(c);
  const std::string path = ::testing::TempDir() + "/tteps_model_test.pt";
  deeptte::SaveModel(model, path);
  auto loaded = deeptte::LoadModel(path);
  EXPECT_EQ(loaded->config().pooling, "mean");
  EXPECT_DOUBLE_EQ(loaded->config().local_loss_weight, 0.3);
  EXPECT_DOUBLE_EQ(loaded->stats().time_std, SampleStats().time_std);
  torch::NoGradGuard no_grad;
  auto b = Batch(MixedLengths(6));
  EXPECT_TRUE(torch::equal(model->PredictSeconds(b), loaded->PredictSeconds(b)));
  std::remove(path.c_str());
  EXPECT_THROW(deeptte::LoadModel(path), std::runtime_error);
}

// docs/compatibility.md: a model.pt of an older or a newer format version is refused by name.
TEST(Checkpoint, AModelFileOfAnotherFormatVersionIsRefusedByName) {
  auto model = MakeModel(ModelConfig{});
  const std::string path = ::testing::TempDir() + "/tteps_model_format_test.pt";
  for (uint32_t other : {kModelFileFormat - 1, kModelFileFormat + 1}) {
    deeptte::SaveModelAsFormat(model, path, other);
    try {
      deeptte::LoadModel(path);
      ADD_FAILURE() << "format version " << other << " was read";
    } catch (const std::runtime_error& e) {
      const std::string want = path + " is a tteps model of format version " +
                               std::to_string(other) + " (tteps.deeptte.v" + std::to_string(other) +
                               "); this tteps reads version " + std::to_string(kModelFileFormat);
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
  deeptte::SaveModelAsFormat(model, path, kModelFileFormat);
  EXPECT_NO_THROW(deeptte::LoadModel(path));
  std::remove(path.c_str());
}

TEST(Evaluate, ReportsFiniteErrorsAndRefusesADivergedModel) {
  DeepTTE model = MakeModel();
  const data::TripVector trips = SampleSlice(0, 40);
  const EvalResult r = Evaluate(*model, trips, 16, /*keep_predictions=*/true);
  EXPECT_EQ(r.n, 40);
  EXPECT_GT(r.mape, 0);
  EXPECT_GT(r.rmse, r.mae * 0.999);
  ASSERT_EQ(r.predictions.size(), 40u);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters()) p.fill_(std::nanf(""));
  }
  try {
    Evaluate(*model, trips, 16);
    ADD_FAILURE() << "a NaN model was evaluated";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("gave MAPE nan"), std::string::npos) << e.what();
  }
}

// Every parameter's gradient after accumulating `indices` in chunks of `chunk` trips, one vector.
std::vector<float> ChunkGradients(DeepTTE& model, const std::vector<size_t>& indices, size_t chunk,
                                  MicroBatchStats* stats) {
  model->zero_grad();
  *stats = chunk == 0 ? AccumulateGradients(*model, SampleTrips(), indices)
                      : AccumulateInChunks(*model, SampleTrips(), indices, chunk);
  const ParamLayout layout = LayoutOf(*model);
  std::vector<float> grad(layout.total());
  CopyGradsOut(*model, layout, grad.data());
  return grad;
}

// A large CPU batch runs in chunks of kCpuChunkTrips: the same loss and gradient as one pass, to
// the rounding of a sum in another order.
TEST(AccumulateGradients, ALargeBatchInChunksEqualsOnePass) {
  DeepTTE model = MakeModel();
  std::vector<size_t> indices(kCpuChunkTrips + 150);
  std::iota(indices.begin(), indices.end(), 0);
  MicroBatchStats whole, chunks, automatic;
  const auto g_whole = ChunkGradients(model, indices, indices.size(), &whole);
  const auto g_chunks = ChunkGradients(model, indices, kCpuChunkTrips, &chunks);
  const auto g_auto = ChunkGradients(model, indices, 0, &automatic);
  EXPECT_EQ(whole.trips, static_cast<int64_t>(indices.size()));
  EXPECT_EQ(chunks.trips, whole.trips);
  EXPECT_NEAR(chunks.loss_sum, whole.loss_sum, 1e-6 * std::abs(whole.loss_sum));
  float largest = 0, diff = 0;
  for (size_t k = 0; k < g_whole.size(); ++k) {
    largest = std::max(largest, std::abs(g_whole[k]));
    diff = std::max(diff, std::abs(g_whole[k] - g_chunks[k]));
  }
  EXPECT_GT(largest, 0);
  EXPECT_LT(diff, 1e-5 * largest);
  EXPECT_GT(diff, 0) << "the chunks summed in the same order as one pass: were they chunks?";
  // On the CPU, AccumulateGradients is the chunks, bit for bit.
  EXPECT_EQ(g_auto, g_chunks);
  EXPECT_EQ(automatic.loss_sum, chunks.loss_sum);
}

// An overlapped push's gradient hooks, armed before a CPU batch that runs in chunks, see each
// parameter's whole gradient: what each bucket holds when it completes (when a push or an
// allreduce would send it) is what .grad ends with, and every bucket completes once.
TEST(AccumulateGradients, GradientHooksSeeAChunkedBatchsWholeGradient) {
  DeepTTE model = MakeModel();
  const ParamLayout layout = LayoutOf(*model);
  std::vector<float> hooked(layout.total(), -1.f), sent(layout.total(), -2.f);
  const std::vector<Bucket> buckets = PlanBuckets(layout, 64 * 1024);
  int buckets_done = 0;
  GradientHooks hooks(*model, layout, buckets, [&](int b) {
    ++buckets_done;
    std::copy(hooked.begin() + buckets[b].begin, hooked.begin() + buckets[b].end,
              sent.begin() + buckets[b].begin);
  });
  std::vector<size_t> indices(kCpuChunkTrips + 40);
  std::iota(indices.begin(), indices.end(), 0);
  model->zero_grad(/*set_to_none=*/true);
  hooks.Arm(hooked.data());
  AccumulateGradients(*model, SampleTrips(), indices);
  hooks.Finish();
  EXPECT_EQ(buckets_done, static_cast<int>(buckets.size()));
  std::vector<float> grad(layout.total());
  CopyGradsOut(*model, layout, grad.data());
  EXPECT_EQ(sent, grad);
}

// What makes sparse rows exact: after a step's backward, every key outside the spans of the
// rows its trips used has a gradient of exactly zero, so sending only the spans loses nothing.
TEST(EmbeddingRows, EveryGradientOutsideTheUsedRowsIsExactlyZero) {
  DeepTTE model = MakeModel();
  const ParamLayout layout = LayoutOf(*model);
  const RowSpans rows(layout, deeptte::EmbeddingTables());
  const std::vector<std::vector<size_t>> slices = {{3, 17, 40}, {41, 99}};
  model->zero_grad();
  for (const auto& s : slices) AccumulateGradients(*model, SampleTrips(), s);
  std::vector<float> grad(layout.total());
  CopyGradsOut(*model, layout, grad.data());
  const TableRows used = deeptte::EmbeddingRows(SampleTrips(), slices);
  ASSERT_EQ(used.size(), 2u);
  EXPECT_LE(used[0].size(), 5u);
  const std::vector<KeyRange> spans = rows.Spans(used);
  std::vector<bool> sent(layout.total(), false);
  for (const auto& r : spans) std::fill(sent.begin() + r.begin, sent.begin() + r.end, true);
  int64_t nonzero_sent = 0;
  for (int64_t k = 0; k < layout.total(); ++k) {
    if (!sent[k]) {
      ASSERT_EQ(grad[k], 0.f) << "key " << k;
    } else if (grad[k] != 0.f) {
      ++nonzero_sent;
    }
  }
  EXPECT_GT(nonzero_sent, 0);
  // The two tables are most of the model; a step of 5 trips sends well under half of it.
  EXPECT_LT(SpanKeys(spans), layout.total() * 45 / 100);
  EXPECT_EQ(SpanKeys(rows.Spans({{}, {}})), rows.dense_keys());
}

}  // namespace
}  // namespace tteps
