// The one training loop, over a recording exchange: the steps it plans and takes, the slices
// and trips of each step, the accumulation a policy sets, the stop an exchange agrees on, the
// time budget, train reports, the evaluation schedule at points where the workers agree, and
// the resume offset.
#include "worker/step_driver.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/unit/model/deeptte/test_trips.h"
#include "tests/unit/worker/scripted_link.h"
#include "worker/gradient_step.h"

namespace tteps {
namespace {

using testing_util::SampleSlice;
using testing_util::SampleStats;
using testing_util::SampleTrips;

struct Call {
  int64_t step, trips;
  bool vote, planned_last;
};

// Records what the driver asks; combines nothing (the model's weights stay as they are).
class RecordingExchange : public Exchange {
 public:
  void Start(int64_t first_step, const TableRows* /*rows*/) override {
    starts.push_back(first_step);
  }
  void BeginStep(const StepStart& s) override { backward_trips.push_back(s.trips); }
  ExchangeResult Finish(const StepEnd& e) override {
    ExchangeResult r;
    if (e.again) {
      agains.push_back(e.step);
    } else {
      calls.push_back({e.step, e.trips, e.stop_vote, e.planned_last});
    }
    if (e.step == change_view_at && !e.again) {
      if (on_view_change) on_view_change();
      r.view_changed = true;
      return r;
    }
    if (e.step == poison_at) {
      torch::NoGradGuard no_grad;
      model->parameters().front().fill_(std::nanf(""));  // as a diverged update would
    }
    r.stop = (e.step == stop_at || e.stop_vote) && !e.planned_last;
    return r;
  }
  void PushSlice(const SlicePush& p) override {
    slice_pushes.push_back({p.slice, p.step, p.trips});
  }
  void Report(TrainReport* r, int64_t steps) override { r->exchange = {{"steps", double(steps)}}; }
  void set_agree_every(int64_t n) { agree_every_ = n; }

  int64_t stop_at = -1, poison_at = -1, change_view_at = -1;
  std::function<void()> on_view_change;  // what the scheduler changed while Finish waited
  torch::nn::Module* model = nullptr;
  std::vector<int64_t> starts, backward_trips, agains;
  std::vector<Call> calls;
  struct SlicePush {
    int slice;
    int64_t step, trips;
  };
  std::vector<SlicePush> slice_pushes;  // lost workers' slices computed here
};

// The scheduler's commands as a test gives them: an accumulation policy's decision, once the
// exchange has finished `after` steps.
std::function<std::vector<StepCommand>()> AccumulationOnceAfter(const RecordingExchange* ex,
                                                                size_t after,
                                                                int64_t accumulation) {
  return [ex, after, accumulation, sent = false]() mutable {
    if (sent || ex->calls.size() < after) return std::vector<StepCommand>{};
    sent = true;
    StepCommand c;
    c.kind = StepCommand::kSetAccumulation;
    c.accumulation = accumulation;
    return std::vector<StepCommand>{c};
  };
}

StepCommand Adopt(int slice, std::optional<SliceSchedule> schedule) {
  StepCommand c;
  c.kind = StepCommand::kAdopt;
  c.slice = slice;
  c.schedule = std::move(schedule);
  return c;
}

struct Outcome {
  DriverResult result;
  RecordingExchange ex;
  std::vector<TrainReport> reports;
  std::vector<std::pair<int64_t, bool>> evals;  // (steps, final)
};

const data::TripVector& Trips() {
  static const auto* t = new data::TripVector(SampleSlice(0, 200));
  return *t;
}

TrainConfig Config() {
  TrainConfig c;
  c.batch_size = 32;  // 200 trips: 7 steps per epoch, the last one of 8 trips
  c.epochs = 2;
  c.log_every = 5;
  c.eval.every_steps = 2;
  return c;
}

// Runs the driver over the first 200 sample trips; `setup` adjusts the pieces first.
template <class Setup>
Outcome Drive(TrainConfig config, DriverOptions o, Setup setup) {
  torch::manual_seed(1);
  deeptte::DeepTTE model(deeptte::ModelConfig{}, SampleStats());
  Outcome run;
  ScriptedLink hooks;
  hooks.report = [&](const TrainReport& r) { run.reports.push_back(r); };
  hooks.evaluate = [&](int64_t steps, int64_t, double, bool final) {
    run.evals.push_back({steps, final});
  };
  setup(run.ex, hooks, o);
  run.ex.model = model.get();
  run.result = StepDriver(*model, Trips(), config, o, &hooks, &run.ex).Run();
  return run;
}
Outcome Drive(TrainConfig config, DriverOptions o = {}) {
  return Drive(config, o, [](RecordingExchange&, ScriptedLink&, DriverOptions&) {});
}

TEST(StepDriver, TakesThePlannedStepsAndHandsEachOneToTheExchange) {
  const Outcome run = Drive(Config());
  EXPECT_EQ(run.ex.starts, std::vector<int64_t>{0});
  ASSERT_EQ(run.ex.calls.size(), 14u);
  int64_t trips = 0;
  for (size_t i = 0; i < run.ex.calls.size(); ++i) {
    const Call& c = run.ex.calls[i];
    EXPECT_EQ(c.step, static_cast<int64_t>(i));
    EXPECT_EQ(c.planned_last, i == 13);
    EXPECT_FALSE(c.vote);
    EXPECT_EQ(c.trips, i % 7 == 6 ? 8 : 32) << i;
    EXPECT_EQ(run.ex.backward_trips[i], c.trips);
    trips += c.trips;
  }
  EXPECT_EQ(trips, 400);  // both epochs, every trip once per epoch
  EXPECT_EQ(run.result.steps, 14);
  EXPECT_EQ(run.result.epochs, 2);
  EXPECT_EQ(run.result.trips, 400);
  // Reports every 5 steps and at the end, with the exchange's own values.
  ASSERT_EQ(run.reports.size(), 3u);
  EXPECT_EQ(run.reports[0].step, 5);
  EXPECT_EQ(run.reports[1].step, 10);
  EXPECT_EQ(run.reports[2].step, 14);
  EXPECT_EQ(run.reports[2].epoch, 1);
  EXPECT_EQ(run.reports[2].step_losses.size(), 4u);
  EXPECT_EQ(run.reports[2].Exchange("steps"), 4);
  EXPECT_GT(run.reports[0].loss, 0);
}

TEST(StepDriver, EvaluatesOnScheduleWhereTheWorkersAgreeAndAtTheEnd) {
  const Outcome every_step = Drive(Config());
  const std::vector<std::pair<int64_t, bool>> two = {
      {2, false}, {4, false}, {6, false}, {8, false}, {10, false}, {12, false}, {14, true}};
  EXPECT_EQ(every_step.evals, two);
  // Due every 2 steps, but the weights agree only every 3: each evaluation waits for that.
  const Outcome averaging =
      Drive(Config(), {},
            [](RecordingExchange& ex, ScriptedLink&, DriverOptions&) { ex.set_agree_every(3); });
  const std::vector<std::pair<int64_t, bool>> three = {
      {3, false}, {6, false}, {9, false}, {12, false}, {14, true}};
  EXPECT_EQ(averaging.evals, three);
}

TEST(StepDriver, AStopTheExchangeAgreesOnEndsTrainingAfterThatStep) {
  const Outcome run = Drive(
      Config(), {}, [](RecordingExchange& ex, ScriptedLink&, DriverOptions&) { ex.stop_at = 5; });
  EXPECT_EQ(run.ex.calls.size(), 6u);
  EXPECT_EQ(run.result.steps, 6);
  ASSERT_FALSE(run.reports.empty());
  EXPECT_EQ(run.reports.back().step, 6);  // the last window is reported
  EXPECT_EQ(run.evals.back(), std::make_pair(int64_t{6}, true));
}

TEST(StepDriver, AStopRequestIsThisWorkersVote) {
  const Outcome run =
      Drive(Config(), {}, [](RecordingExchange& ex, ScriptedLink& h, DriverOptions&) {
        h.stop_requested = [&ex] { return ex.calls.size() >= 3; };
      });
  ASSERT_EQ(run.ex.calls.size(), 4u);
  EXPECT_FALSE(run.ex.calls[2].vote);
  EXPECT_TRUE(run.ex.calls[3].vote);
  EXPECT_EQ(run.result.steps, 4);
}

// The scheduler's pause holds the next step until its resume, and the wait is not training
// time; its stop is this worker's vote.
TEST(StepDriver, APauseHoldsTheNextStepUntilTheResumeAndAStopCommandIsAVote) {
  int awaited = 0;
  const auto start = std::chrono::steady_clock::now();
  const Outcome run =
      Drive(Config(), {}, [&](RecordingExchange& ex, ScriptedLink& h, DriverOptions&) {
        h.take_commands = [&ex, &awaited, sent = 0]() mutable {
          std::vector<StepCommand> out;
          StepCommand c;
          if (sent == 0 && ex.calls.size() == 2) {
            c.kind = StepCommand::kPause;
            out.push_back(c);
            ++sent;
          } else if (sent == 1 && awaited > 0) {
            c.kind = StepCommand::kResume;
            out.push_back(c);
            c.kind = StepCommand::kStop;
            out.push_back(c);
            ++sent;
          }
          return out;
        };
        h.await_command = [&awaited] {
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          ++awaited;
          return true;
        };
      });
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(awaited, 1);
  ASSERT_EQ(run.ex.calls.size(), 3u);  // the stop came with the resume, before step 3
  EXPECT_TRUE(run.ex.calls[2].vote);
  EXPECT_FALSE(run.ex.calls[1].vote);
  EXPECT_LT(run.result.train_seconds, wall_s - 0.29);
}

TEST(StepDriver, TheTimeBudgetVotesToStop) {
  DriverOptions o;
  o.max_train_s = 1e-9;  // spent by the end of the first step's compute
  const Outcome run = Drive(Config(), o);
  ASSERT_EQ(run.ex.calls.size(), 1u);
  EXPECT_TRUE(run.ex.calls[0].vote);
  EXPECT_EQ(run.result.steps, 1);
}

TEST(StepDriver, AccumulationTakesThatManySlicesPerStepAndFollowsThePolicy) {
  DriverOptions o;
  o.accumulation = 2;
  TrainConfig c = Config();
  c.epochs = 4;  // 28 slices of the global batch
  const Outcome run = Drive(c, o, [](RecordingExchange& ex, ScriptedLink& h, DriverOptions&) {
    h.take_commands = AccumulationOnceAfter(&ex, 4, 1);
  });
  ASSERT_GE(run.ex.calls.size(), 6u);
  EXPECT_EQ(run.ex.calls[0].trips, 64);      // slices 0 and 1
  EXPECT_EQ(run.ex.calls[3].trips, 8 + 32);  // slices 6 (the epoch's short one) and 7
  // A step's data is drawn before the previous step's exchange: the policy's 1, first seen
  // before the fifth exchange, applies from the sixth step.
  EXPECT_EQ(run.ex.calls[4].trips, 64);
  EXPECT_EQ(run.ex.calls[5].trips, 32);
  EXPECT_EQ(run.reports.back().accumulation, 1);
}

// A lost worker's slice, computed by another worker, draws what its worker would have drawn,
// also after an accumulation policy changed that worker's accumulation, and from the step the
// worker was lost in: here the step before the change, drawn still at the old accumulation.
TEST(StepDriver, AnAdoptedSliceFollowsItsWorkersAccumulationSchedule) {
  TrainConfig c = Config();
  c.epochs = 6;  // 42 steps; every 7th micro-batch is an epoch's short one
  DriverOptions o;
  o.num_workers = 2;
  o.accumulation = 2;
  // Worker 1 on its own: its policy asks for 3 micro-batches a step once 4 steps are done.
  o.worker = 1;
  std::vector<AccumulationChange> changes;
  const Outcome own = Drive(c, o, [&](RecordingExchange& ex, ScriptedLink& h, DriverOptions&) {
    h.take_commands = AccumulationOnceAfter(&ex, 4, 3);
    h.accumulation_changed = [&](const AccumulationChange& ch) { changes.push_back(ch); };
  });
  ASSERT_EQ(changes.size(), 1u);
  const int64_t changed = changes[0].step;
  EXPECT_EQ(changed, 5);  // drawn before the fifth exchange
  EXPECT_EQ(changes[0].position, 10);
  EXPECT_EQ(changes[0].accumulation, 3);
  SliceSchedule schedule(2);
  schedule.Add(changes[0]);

  // Worker 0, at its own accumulation of 2, is given slice 1 in step 4.
  o.worker = 0;
  const Outcome adopter = Drive(c, o, [&](RecordingExchange& ex, ScriptedLink& h, DriverOptions&) {
    h.take_commands = [&ex, changed, schedule] {
      if (static_cast<int64_t>(ex.calls.size()) != changed - 1) return std::vector<StepCommand>{};
      return std::vector<StepCommand>{Adopt(1, schedule)};
    };
  });
  const auto& pushes = adopter.ex.slice_pushes;
  ASSERT_EQ(pushes.size(), own.ex.calls.size() - (changed - 1));
  for (const auto& p : pushes) {
    EXPECT_EQ(p.slice, 1);
    EXPECT_EQ(p.trips, own.ex.calls[p.step].trips) << "step " << p.step;
  }
  EXPECT_EQ(pushes[0].step, changed - 1);
  EXPECT_EQ(pushes[0].trips, 32);  // the old accumulation
  EXPECT_EQ(pushes[1].trips, 48);  // the new one
  for (const auto& call : adopter.ex.calls) {
    EXPECT_LE(call.trips, 32);  // its own slice stays at 2 micro-batches a step
  }
}

// Sync: the wait for step 3's end stops because the scheduler gave this worker lost worker 1's
// slice (which that step may need): the driver computes and pushes slice 1 of step 3 on the
// step's weights, finishes step 3 again, and computes the slice beside its own from then on.
TEST(StepDriver, ASliceGivenWhileTheStepWaitsIsPushedForThatStepAndTheStepFinishedAgain) {
  DriverOptions o;
  o.num_workers = 2;
  bool given = false;
  const Outcome run =
      Drive(Config(), o, [&](RecordingExchange& ex, ScriptedLink& h, DriverOptions&) {
        ex.change_view_at = 3;
        ex.on_view_change = [&given] { given = true; };
        h.take_commands = [&given] {
          const bool fresh = std::exchange(given, false);
          return fresh ? std::vector<StepCommand>{Adopt(1, std::nullopt)}
                       : std::vector<StepCommand>{};
        };
      });
  EXPECT_EQ(run.ex.agains, std::vector<int64_t>{3});
  ASSERT_EQ(run.ex.calls.size(), 14u);  // every step finished once (and step 3 again)
  const auto& pushes = run.ex.slice_pushes;
  ASSERT_EQ(pushes.size(), 14u - 3u);  // slice 1 of steps 3 to 13
  for (size_t i = 0; i < pushes.size(); ++i) {
    EXPECT_EQ(pushes[i].slice, 1);
    EXPECT_EQ(pushes[i].step, static_cast<int64_t>(i) + 3);
    EXPECT_GT(pushes[i].trips, 0);
  }
}

TEST(StepDriver, StepsOfTwoMicroBatchesOrMoreMeasureTheGradientNoise) {
  DriverOptions o;
  o.accumulation = 2;
  const Outcome two = Drive(Config(), o);
  ASSERT_FALSE(two.reports.empty());
  // The last step of each epoch is one 8-trip slice plus a 32-trip one: every step measures.
  EXPECT_EQ(two.reports[0].noise_steps, 5);
  // Five steps' estimates are noisy (either may come out negative), but they are measured.
  EXPECT_TRUE(std::isfinite(two.reports[0].noise.trace));
  EXPECT_NE(two.reports[0].noise.grad_sq, 0);
  EXPECT_EQ(Drive(Config()).reports[0].noise_steps, 0);  // one micro-batch: nothing to compare
}

// The number of slowdown spans in a run with `schedule` (on, period) seconds.
int SlowdownSpans(double on_s, double period_s) {
  std::string events;
  Tracer tracer(1, "worker", [&](std::string e) { events += e; });
  DriverOptions o;
  o.slowdown_percent = 10;
  o.slowdown_on_s = on_s;
  o.slowdown_period_s = period_s;
  o.tracer = &tracer;
  TrainConfig c = Config();
  c.epochs = 1;  // 7 steps
  Drive(c, o);
  tracer.Flush();
  int spans = 0;
  for (size_t at = 0; (at = events.find("\"name\":\"slowdown\"", at)) != std::string::npos; ++at) {
    ++spans;
  }
  return spans;
}

TEST(StepDriver, ASlowdownScheduleSlowsOnlyInItsOnPhase) {
  EXPECT_EQ(SlowdownSpans(0, 0), 7);       // no schedule: every step
  EXPECT_EQ(SlowdownSpans(1e8, 1e9), 7);   // always in the on phase
  EXPECT_EQ(SlowdownSpans(1e-9, 1e9), 0);  // the on phase over before the first step ends
}

TEST(StepDriver, ResumingSkipsTheDataOfTheStepsDone) {
  const Outcome full = Drive(Config());
  DriverOptions o;
  o.start_step = 9;
  std::vector<AccumulationChange> changes;
  const Outcome resumed =
      Drive(Config(), o, [&](RecordingExchange&, ScriptedLink& h, DriverOptions&) {
        h.accumulation_changed = [&](const AccumulationChange& c) { changes.push_back(c); };
      });
  EXPECT_EQ(resumed.ex.starts, std::vector<int64_t>{9});
  // Where its stream starts again, for the schedule of its slice (the one before may differ).
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].step, 9);
  EXPECT_EQ(changes[0].position, 9);
  EXPECT_EQ(changes[0].accumulation, 1);
  ASSERT_EQ(resumed.ex.calls.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(resumed.ex.calls[i].step, full.ex.calls[9 + i].step);
    EXPECT_EQ(resumed.ex.calls[i].trips, full.ex.calls[9 + i].trips);
  }
  // The same slices as the uninterrupted run, hence the same losses (the weights here never
  // change: the recording exchange applies nothing).
  EXPECT_EQ(resumed.reports.back().step_losses, full.reports.back().step_losses);
  EXPECT_EQ(resumed.evals.front(), std::make_pair(int64_t{10}, false));
}

TEST(StepDriver, ANonFiniteLossEndsTrainingNamingTheStepAndTrips) {
  try {
    Drive(Config(), {}, [](RecordingExchange& ex, ScriptedLink&, DriverOptions&) {
      ex.poison_at = 2;  // the weights after step 3 hold NaN
    });
    ADD_FAILURE() << "training went on with NaN weights";
  } catch (const std::runtime_error& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("non-finite loss nan in step 4, batch of trips "), std::string::npos)
        << text;
    EXPECT_NE(text.find("(32 trips)"), std::string::npos) << text;
  }
}

TEST(NonFiniteGradient, NamesTheFirstParameterWithANanOrInfinity) {
  torch::nn::Linear a(2, 3), b(3, 1);
  torch::nn::Sequential net(a, b);
  net->forward(torch::ones({4, 2})).sum().backward();
  EXPECT_EQ(NonFiniteGradient(*net), "");
  b->bias.mutable_grad()[0] = INFINITY;
  EXPECT_EQ(NonFiniteGradient(*net), "1.bias");
  a->weight.mutable_grad()[1][0] = std::nanf("");
  EXPECT_EQ(NonFiniteGradient(*net), "0.weight");
}

}  // namespace
}  // namespace tteps
