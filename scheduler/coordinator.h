// The scheduler's coordination loop: registration and the cluster map, the dispatch of what
// the nodes send (reports, heartbeats, joins) to the parts that handle it (scheduler/joins.h,
// scheduler/failover.h, scheduler/policy_link.h over scheduler/membership.h), the evaluation
// hand-off, the end of training and summary.json. Single-threaded over one ROUTER socket;
// evaluation runs elsewhere (Evaluation) so the loop never waits for it.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <zmq.hpp>

#include "common/eval_schedule.h"
#include "common/progress.h"
#include "common/run_output.h"
#include "common/topics/server_stats.h"
#include "common/topics/server_topics.h"
#include "common/topics/worker_topics.h"
#include "common/trace.h"
#include "common/transport.h"
#include "scheduler/accumulation_policy.h"
#include "scheduler/coordinator_options.h"
#include "scheduler/eval_record.h"
#include "scheduler/evaluation.h"
#include "scheduler/failover.h"
#include "scheduler/heartbeats.h"
#include "scheduler/job_state.h"
#include "scheduler/joins.h"
#include "scheduler/live_outputs.h"

namespace tteps::scheduler {

class Coordinator {
 public:
  // `policy` may be null (fixed accumulation); otherwise it sees every worker's windows and
  // its decisions are sent to the workers.
  Coordinator(zmq::socket_t& socket, CoordinatorOptions opts, Evaluation* eval, RunOutput* out,
              AccumulationPolicy* policy = nullptr);
  // Runs the job to its end; returns the process exit code (0 on success).
  int Run();
  // --trace: the nodes' timeline events are appended here.
  void set_trace(TraceFile* trace) { trace_ = trace; }
  // --metrics_port: where the job's gauges go (MetricsEndpoint::Publish), every 500 ms.
  void set_metrics(std::function<void(std::string)> publish) {
    live_.set_publish(std::move(publish));
  }

 private:
  // Waits for every node's registration: -1 once all are in, else the exit code (a timeout, a
  // fatal refusal, an interrupt; summary.json written).
  int RegisterAll();
  void Register(const Message& m, std::string* fatal);
  // Says once on the console that a job across hosts without CURVE is open to anyone.
  void WarnIfOpen() const;
  // Handles what arrives within 20 ms (at most 1,000 messages).
  void ReceiveFor20Ms();
  void HandleMessage(const Message& m);
  void OnWorkerReport(Node& node, const Message& m);
  // The reports' handlers (a garbled body throws CodecError: the message is refused).
  void OnDone(Node& node, const topics::Done& done);
  // An accumulation policy's change as the worker applied it: its slice's schedule grows.
  void OnServerReport(const Node& node, const Header& h);
  // Clipping in sync mode: a range's share of a version's squared gradient norm.
  void OnNormPart(const Node& node, const server::topics::NormPartial& part);
  void OnReady(const Node& node);
  void OnTrainReport(const Node& node, TrainReport r);
  // Ring modes: worker 0's weights (one payload of m).
  void OnSnapshot(const Node& node, const topics::Snapshot& snapshot, const Message& m);
  void SendDecisions();
  void FinishPolicy();
  // How a policy's decision reaches its worker.
  PolicyLink::Send SendAccumulation();
  // The parameter-server modes: an evaluation of the servers' weights when the schedule says.
  void MaybeEvaluate();
  // An evaluation's result: its metrics line, early stopping, the best and the final one.
  void OnEvaluation(const EvalOutcome& r);
  // --max_train_s, or --patience: tells every worker to stop (once).
  void StopTraining();
  // Seconds since the first worker began training, pauses left out (0 before).
  double TrainSeconds() const;
  // Training -> draining once every worker is done; draining -> done once the final evaluation
  // and the servers' statistics are in (or their deadline passed).
  void AdvancePhase();
  void Fail(const std::string& reason);
  // SIGTERM or SIGINT (CatchInterrupts): the job ends now, every node told, summary.json with
  // "status":"interrupted" and the last step every worker completed.
  void Interrupt(int sig);
  void WriteSummary();
  // The job's gauges for --metrics_port.
  JobGauges Gauges() const;

  zmq::socket_t& socket_;
  JobState job_;
  Evaluation* eval_;
  Failover failover_;
  Joins joins_;
  Heartbeats heartbeats_;
  EvalRecord evals_;
  std::map<int, server::ServerStats> server_stats_;
  std::string failure_;
  int interrupted_ = 0;  // the signal that interrupted the job (0: none)
  int refused_registrations_ = 0;
  ProgressLine progress_line_;
  std::chrono::steady_clock::time_point train_start_, train_end_;
  // Draining: how long the servers' statistics are awaited after the final evaluation.
  std::chrono::steady_clock::time_point server_stats_deadline_ =
      std::chrono::steady_clock::time_point::max();
  double startup_s_ = 0;  // from the scheduler's start to training (every worker ready)
  EvalSchedule eval_schedule_;
  double last_loss_ = 0, last_trips_per_s_ = 0;  // of the latest reports, for the progress line
  bool stop_sent_ = false;
  std::set<int> ready_;         // workers that reported ready to train
  bool final_offered_ = false;  // worker 0 sent its final weights (the ring modes)
  TraceFile* trace_ = nullptr;
  ReleaseRequests release_requests_;  // launch/tteps --release
  // TensorBoard's events and --metrics_port's gauges.
  LiveOutputs live_;
};

}  // namespace tteps::scheduler
