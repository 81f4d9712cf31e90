// The scheduler's coordination loop: registration and the cluster map, heartbeats (a silent
// node is named), worker metrics into metrics.jsonl and one progress line, evaluations, the end
// of training and summary.json. Single-threaded over one ROUTER socket; evaluation runs
// elsewhere (Evaluation) so the loop never waits for it.
#pragma once

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "common/cluster_map.h"
#include "common/curve.h"
#include "common/eval_schedule.h"
#include "common/job_config.h"
#include "common/json_writer.h"
#include "common/patience.h"
#include "common/progress.h"
#include "common/run_output.h"
#include "common/slice_schedule.h"
#include "common/trace.h"
#include "common/transport.h"
#include "scheduler/accumulation_policy.h"
#include "scheduler/evaluation.h"
#include "scheduler/job_phase.h"
#include "scheduler/membership.h"
#include "scheduler/slice_schedules.h"
#include "scheduler/worker_book.h"
#include "server/checkpoint.h"
#include "server/server_stats.h"
#include "worker/train_report.h"

namespace tteps::scheduler {

struct CoordinatorOptions {
  JobConfig config;
  // The training store the scheduler opened (its manifest's checksum; empty: JSON-lines) and
  // where: a worker whose own copy differs is refused at registration.
  std::string data_path, data_checksum;
  uint64_t bad_records_skipped = 0;  // --bad_records skip: by the scheduler's reading
  int num_servers = 1, num_workers = 1;
  int64_t param_count = 0;
  uint64_t fingerprint = 0;
  // Keys that hardly travel (sparse rows' embedding tables): the servers' ranges share the
  // other keys evenly.
  std::vector<KeyRange> light_keys;
  int64_t total_steps = 0;
  int64_t resume_version = -1;             // >= 0: the servers restore this checkpoint version
  std::vector<KeyRange> resume_ranges;     // resuming: the servers' ranges in the checkpoint
  std::vector<int64_t> start_steps;        // resuming: each worker's first step
  std::map<int, SliceSchedule> schedules;  // resuming: the slices' schedules kept (--resume)
  const CurveSecurity* curve = nullptr;    // CURVE on this scheduler's socket (null: off)
};

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

 private:
  struct Node {
    NodeInfo info;
    std::string peer;  // routing id of its control socket
    std::chrono::steady_clock::time_point last_seen;
    bool done = false;
    bool lost = false;  // declared lost (async / SSP go on without it)
  };

  // `fatal`: the refusal ends the job (a member of it cannot take part).
  bool Register(const Message& m, std::string* error, bool* fatal);
  // Why a worker's training data is not the scheduler's store; empty if it is.
  std::string DataMismatch(const NodeInfo& info) const;
  void SendMaps();
  // Says once on the console that a job across hosts without CURVE is open to anyone.
  void WarnIfOpen() const;
  void HandleMessage(const Message& m);
  // Sends command `topic` to every node of `role` (or only to id `only_id`) still running.
  void Command(Role role, const char* topic, int64_t step = 0, int64_t samples = 0,
               double norm = -1, int only_id = -1, const std::string& text = "");
  void OnWorkerReport(Node& node, const Message& m);
  // An accumulation policy's change as the worker applied it: its slice's schedule grows.
  void OnAccumulationChanged(const Node& node, const Header& h);
  void OnServerReport(const Node& node, const Header& h);
  void OnReady(const Node& node);
  // Throws CodecError on a garbled report.
  void OnTrainReport(const Node& node, const std::string& body);
  void OnSnapshot(const Node& node, const Message& m);
  void SendDecisions();
  void FinishPolicy();
  void CheckSilence();
  // A silent worker while others train is dropped, not fatal: the servers refuse its pushes and
  // it is told to stop if it ever speaks again. Async / SSP: the servers stop waiting for its
  // clock. Sync (fixed accumulation): its slices go to the live worker with the fewest, which
  // computes them beside its own, so every step still sums the same trips.
  // --replicas: a silent server is dropped when another live server holds its range; the
  // workers (and the evaluation) read that range from the replica from then on.
  bool CanLose(const Node& n) const;
  void DeclareLost(Node& n, double silent_s);
  void DeclareServerLost(Node& n, double silent_s);
  // A silent server whose range has no live replica, while training with checkpoints on
  // (--checkpoint_every) and another server alive: the job rolls back to the newest complete
  // checkpoint on the live servers (ranges cut anew, servers renumbered, epoch + 1) instead of
  // failing. The workers train the abandoned steps again.
  bool CanRollback(const Node& n) const;
  // Sync: a worker registering while the job trains (tteps-worker --scheduler ...) takes over a
  // lost worker's slice from its adopter: the adopter leaves it at a step boundary
  // (kReleaseSlice, kReleased), and the joiner starts at that step, so every step still sums
  // the same trips. Refused (with the reason) when no adopted slice is free. Async / SSP: the
  // joiner takes a lost worker's place (its id's pushes count for it on the servers,
  // kWorkerJoined) from the step that worker last reported.
  void OnJoin(const Message& m);
  std::string JoinRefusal(const NodeInfo& info, int* slice) const;
  void OnJoinerReady(const Node& node);
  // Async / SSP: the last step reported for a worker's place, by it or by a joiner that held it.
  int64_t PlaceStep(int place) const;
  void OnReleased(const Node& node, const Header& h);
  // Sends a membership change's commands and tells the policy which slices lost or regained
  // their own worker.
  void Apply(const MembershipChange& change);
  // --min_workers (sync, async, SSP): below that many live workers the workers pause (kPause)
  // until enough joined; a pause longer than --timeout_s fails the job, naming the lost.
  void CheckMinWorkers();
  // A joiner given its go while training is paused gets the pause too.
  void PauseIfShort(int worker, int64_t step);
  void Rollback(Node& n, double silent_s);
  // Rollback's parts: the live servers renumbered in their old order, the keys cut anew over
  // them and the map's next epoch from `point` (returns how many servers); every live node
  // told (its new map).
  int RenumberServers(const server::ResumePoint& point);
  void SendRollback(int64_t version);
  // The first server of s's range (its replicas'): the key of its share of a clipping norm.
  int RangeGroup(int server) const;
  int RangeGroups() const;
  // The job's servers now: as launched until the maps are out, then the map's (a rollback
  // renumbers the live ones).
  int Servers() const {
    return map_.servers.empty() ? opts_.num_servers : static_cast<int>(map_.servers.size());
  }
  // Adds a membership event: summary.json, a metrics line, one console line.
  void RecordMembership(const JsonObject& event, const std::string& console);
  // The parameter-server modes: an evaluation of the servers' weights when the schedule says.
  void MaybeEvaluate();
  // --max_train_s: once the budget is spent, tells every worker to stop (once).
  void MaybeStopForBudget();
  int64_t MinStep() const;
  // Seconds since the first worker began training, pauses left out (0 before).
  double TrainSeconds() const;
  // Peak resident memory (MB) of the scheduler, each worker and each server.
  // {"scheduler", "workers": [...], "servers": [...]} of one memory figure.
  JsonObject PeakMemoryJson(double WorkerProgress::*worker_field,
                            double server::ServerStats::*server_field, double scheduler) const;
  void Fail(const std::string& reason);
  // Run's parts. Waits for every node's registration: -1 once all are in, else the exit code
  // (a timeout, a fatal refusal, an interrupt; summary.json written).
  int RegisterAll();
  // Handles what arrives within 20 ms (at most 1,000 messages).
  void ReceiveFor20Ms();
  // An evaluation's result: its metrics line, early stopping, the best and the final one.
  void OnEvaluation(const EvalOutcome& r);
  // Training -> draining once every worker is done; draining -> done once the final evaluation
  // and the servers' statistics are in (or their deadline passed).
  void AdvancePhase();
  // SIGTERM or SIGINT (CatchInterrupts): the job ends now, every node told, summary.json with
  // "status":"interrupted" and the last step every worker completed.
  void Interrupt(int sig);
  void Broadcast(const std::string& shutdown_reason);
  void WriteSummary(const std::string& final_eval_json, const std::string& error);
  // summary.json's parts: the work done (steps, trips, times, bytes), and the servers'
  // statistics with what every process refused.
  void AddWork(JsonObject& s) const;
  void AddServersAndRefusals(JsonObject& s) const;
  Node* Find(const std::string& peer);

  zmq::socket_t& socket_;
  CoordinatorOptions opts_;
  Mode mode_;
  Evaluation* eval_;
  RunOutput* out_;
  AccumulationPolicy* policy_;
  int64_t decisions_ = 0;
  bool policy_finished_ = false;
  std::string policy_error_;
  ClusterMap map_;
  std::vector<Node> nodes_;
  WorkerBook book_;  // what the workers reported (scheduler/worker_book.h)
  std::map<int, server::ServerStats> server_stats_;
  // Clipping: version -> range group -> that range's squared norm (a replica's copy once).
  std::map<int64_t, std::map<int, double>> norm_parts_;
  std::string failure_;
  int interrupted_ = 0;  // the signal that interrupted the job (0: none)
  ProgressLine progress_line_;
  std::chrono::steady_clock::time_point start_, train_start_, train_end_;
  // Draining: how long the servers' statistics are awaited after the final evaluation.
  std::chrono::steady_clock::time_point server_stats_deadline_ =
      std::chrono::steady_clock::time_point::max();
  double startup_s_ = 0;  // from the scheduler's start to training (every worker ready)
  EvalSchedule eval_schedule_;
  double last_loss_ = 0, last_trips_per_s_ = 0;  // of the latest reports, for the progress line
  bool stop_sent_ = false;
  int64_t steps_done_ = 0;              // the most steps a finished worker reported
  int64_t min_steps_done_ = INT64_MAX;  // the fewest
  std::set<int> ready_;                 // workers that reported ready to train
  JobPhase phase_;
  bool final_offered_ = false;  // worker 0 sent its final weights (the ring modes)
  std::string final_eval_;
  std::string best_eval_;       // {"step":..,"version":..,"train_s":..,"mape":..,...}; empty: none
  int64_t refused_ = 0;         // malformed messages and messages from unregistered peers
  std::set<int> lost_servers_;  // of the current map
  int64_t steps_redone_ = 0;    // the steps rollbacks abandoned (the furthest worker's)
  std::string pause_text_;      // why training is paused, for workers that join meanwhile
  Patience patience_{0};        // --patience over the evaluations (set in the constructor)
  std::string early_stop_;      // {"evaluation_step", "patience", "best_mape"}; empty: none
  std::vector<std::string> membership_;  // JSON of every loss, in order (summary.json)
  SliceSchedules schedules_;             // each slice's accumulations (scheduler/slice_schedules.h)
  Membership members_;  // who is in the job and who computes which slice (scheduler/membership.h)
  TraceFile* trace_ = nullptr;
};

}  // namespace tteps::scheduler
