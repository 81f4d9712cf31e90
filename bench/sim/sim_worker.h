// One simulated worker of bench/scale: it speaks the worker's protocol to the real scheduler
// and servers (registration, the go, the views it follows, heartbeats, pushes and pulls of
// DeepTTE's parameter layout, reports, a joiner's start, handovers) with LibTorch's
// computation replaced by a sleep and its gradient by a known function of the step and the
// slice (bench/sim/synthetic.h). Its pushes and pulls carry the keys `key_fraction` names
// (the whole layout by default), so that hundreds of simulated workers fit one machine's
// memory and loopback. Sync mode: at the end it pulls the final weights and checks them, bit for
// bit, against what the synthetic gradients predict. Async mode: every push is the same
// (Shape), so a server's weights say how many pushes it applied; the job's final weights are
// checked after it ends (tteps-sim-check on its model.pt).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "bench/sim/synthetic.h"
#include "common/bootstrap.h"
#include "common/cluster_map.h"
#include "common/control_channel.h"
#include "common/json_writer.h"
#include "common/kv_client.h"
#include "model/param_layout.h"
#include "worker/scheduler_commands.h"

namespace tteps::sim {

// What every simulated worker of a process shares (read-only once they run).
struct SimShared {
  NodeOptions node;
  ParamLayout layout;
  std::vector<Gradient> gradients;  // GradientsByCoefficient of the layout
  double compute_s = 0;             // slept as each step's computation
  double key_fraction = 1;          // of each server's range, pushed and pulled (PushedKeys)
};

// One simulated worker's account, a JSON line of the process's results.
struct SimOutcome {
  int id = -1, slice = -1;
  int64_t first_step = 0, steps = 0;
  double register_s = 0, go_s = 0, train_s = 0;  // from its start: registered, go, done
  int adopted = 0;                               // slices it computed beside its own, ever
  // Per step from its first: the seconds from its push to the next step's weights.
  std::vector<double> exchange_s;
  int64_t checked_keys = 0;  // final weights compared with the prediction
  bool async = false;        // then the job's model.pt is checked instead (tteps-sim-check)
  Mismatch mismatch;
  std::string error;
  JsonObject ToJson() const;
};

class SimWorker {
 public:
  SimWorker(zmq::context_t& ctx, const SimShared& shared) : ctx_(ctx), shared_(shared) {}
  // Registers, trains every step from its first to the job's last, checks the final weights,
  // says done and waits for the scheduler's end. Never throws: the outcome holds the error.
  SimOutcome Run();

 private:
  void Register();
  void Start();
  void Step(int64_t step);
  // The commands the scheduler queued (adoptions at once, for `step` if it is under way;
  // releases at the next step's start; a pause waits here for its resume).
  void Drain(int64_t step, bool under_way);
  void PushSlice(int slice, int64_t step);
  void Report(int64_t step);
  void Finish();
  void CheckWeights();
  Gradient GradientOf(int64_t step, int slice) const {
    return shared_.gradients.at((out_.async ? 1 : Coefficient(step, slice)) + 3);
  }

  zmq::context_t& ctx_;
  const SimShared& shared_;
  SchedulerCommands commands_;  // outlives the channel, whose thread writes into it
  std::unique_ptr<ControlChannel> control_;
  std::unique_ptr<KVClient> kv_;
  ClusterMap map_;
  int64_t total_ = 0, version_ = 0;  // the job's steps; the version the weights are of
  std::set<int> adopted_;
  std::vector<int> releases_;    // at the next step's start
  std::vector<KeyRange> spans_;  // pushed and pulled (empty: every key)
  // The whole flat vector, from calloc: the pages outside the spans are never touched, so a
  // simulated worker's resident memory is that of its spans.
  std::unique_ptr<float, decltype(&std::free)> weights_{nullptr, &std::free};
  SimOutcome out_;
  Clock::time_point start_;
};

}  // namespace tteps::sim
