// Local training on the shipped sample: the loss goes down, runs are deterministic, and the
// model reaches the accuracy the original code reaches on the same split.
#include "worker/local_trainer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <numeric>

#include "model/data/padded_batch.h"
#include "model/model_params.h"
#include "tests/unit/model/deeptte/test_trips.h"

namespace tteps {
namespace {

using testing_util::SampleStats;
using testing_util::SampleTrips;

data::TripVector Slice(size_t begin, size_t end) { return testing_util::SampleSlice(begin, end); }

deeptte::DeepTTE Model(uint64_t seed) {
  torch::manual_seed(seed);
  return deeptte::DeepTTE(deeptte::ModelConfig{}, SampleStats());
}

std::vector<float> Params(deeptte::DeepTTE& m) {
  auto layout = LayoutOf(*m);
  std::vector<float> flat(layout.total());
  CopyParamsOut(*m, layout, flat.data());
  return flat;
}

TEST(LocalTraining, ShortRunLowersTrainingLoss) {
  // The loss on a fixed set of training trips, before and after 30 steps. (Window means of the
  // logged loss are not comparable: batches are sorted by length, so their losses differ.)
  auto train = Slice(0, 1000);
  std::vector<size_t> probe(200);
  std::iota(probe.begin(), probe.end(), 0);
  auto model = Model(1);
  auto loss_on_probe = [&] {
    torch::NoGradGuard no_grad;
    return model->Loss(deeptte::ToTensors(data::MakeBatch(train, probe, SampleStats())))
        .total.item<double>();
  };
  const double before = loss_on_probe();
  JobConfig opts;
  opts.train.max_steps = 30;
  opts.train.progress_s = 1e9;
  auto r = LocalTrainer(model, train, data::TripVector(), opts, nullptr).Run();
  EXPECT_EQ(r.steps, 30);
  const double after = loss_on_probe();
  EXPECT_LT(after, 0.8 * before) << "before " << before;
}

TEST(LocalTraining, SameSeedSameNumbers) {
  auto train = Slice(0, 300);
  auto eval = Slice(1000, 1100);
  JobConfig opts;
  opts.train.max_steps = 6;
  opts.train.progress_s = 1e9;
  auto a = Model(5), b = Model(5);
  auto ra = LocalTrainer(a, train, eval, opts, nullptr).Run();
  auto rb = LocalTrainer(b, train, eval, opts, nullptr).Run();
  EXPECT_EQ(Params(a), Params(b));
  EXPECT_EQ(ra.final_eval.mape, rb.final_eval.mape);
  EXPECT_EQ(ra.last_loss, rb.last_loss);
}

// About two minutes on one core: 10 epochs over 1,000 trips at batch 64.
TEST(LocalTraining, TenEpochsReachEvalMapeBelowPoint45) {
  auto train = Slice(0, 1000);
  auto eval = Slice(1000, 1200);
  JobConfig opts;
  opts.train.epochs = 10;
  opts.train.batch_size = 64;
  opts.train.progress_s = 30;
  auto model = Model(1);
  auto r = LocalTrainer(model, train, eval, opts, nullptr).Run();
  EXPECT_EQ(r.final_eval.n, 200);
  EXPECT_LT(r.final_eval.mape, 0.45);
  std::printf("10 epochs: eval %s, %.1f trips/s\n", r.final_eval.ToJson().str().c_str(),
              r.trips / r.train_seconds);
}

}  // namespace
}  // namespace tteps
