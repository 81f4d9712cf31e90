#include "scheduler/coordinator.h"

#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/bootstrap.h"
#include "common/cereal_body.h"
#include "common/clock.h"
#include "common/codec.h"
#include "common/count_text.h"
#include "common/interrupt.h"
#include "common/json_writer.h"
#include "common/log_file.h"
#include "common/peak_memory.h"
#include "common/topics/server_topics.h"
#include "common/topics/worker_topics.h"
#include "scheduler/job_summary.h"
#include "scheduler/registration.h"

namespace tteps::scheduler {

Coordinator::Coordinator(zmq::socket_t& socket, CoordinatorOptions opts, Evaluation* eval,
                         RunOutput* out, AccumulationPolicy* policy)
    : socket_(socket),
      job_(socket, std::move(opts), out, policy),
      eval_(eval),
      failover_(job_, eval),
      joins_(job_),
      heartbeats_(job_),
      evals_(job_.opts.config.train.patience, out),
      progress_line_(job_.mode.name(), job_.opts.total_steps, job_.opts.config.train.progress_s),
      eval_schedule_(job_.opts.config.train.eval),
      release_requests_(out->dir()),
      live_(out, job_.opts.num_workers <= job_.opts.worker_series) {
  job_.log.set_text_sink(
      [this](const std::string& text) { live_.Membership(job_.MinStep(), text); });
}

// --- registration ----------------------------------------------------------------------------

void Coordinator::Register(const Message& m, std::string* fatal) {
  NodeInfo info;
  DecodeBody(m.header.text, &info);
  const int expected = info.role == Role::kServer ? job_.opts.num_servers : job_.opts.num_workers;
  bool is_fatal = false;
  const std::string error = RegistrationRefusal(
      job_.nodes.all(), expected, {job_.opts.data_path, job_.opts.data_checksum}, &info, &is_fatal);
  if (error.empty()) {
    job_.nodes.Add(info, m.peer);
    LOG(INFO) << "registered " << info.Name()
              << (info.endpoint.empty() ? "" : " at " + info.endpoint);
    return;
  }
  LOG(ERROR) << "registration refused: " << error;
  ++refused_registrations_;
  job_.nodes.Shutdown(m.peer, error);
  if (is_fatal) *fatal = "registration refused: " + error;
}

int Coordinator::RegisterAll() {
  const CoordinatorOptions& opts = job_.opts;
  while (job_.nodes.size() < opts.num_servers + opts.num_workers) {
    if (const int sig = InterruptSignal()) {
      Interrupt(sig);
      WriteSummary();
      return 128 + sig;
    }
    if (job_.WallSeconds() > opts.config.cluster.timeout_s) {
      Fail("registration timed out after " + std::to_string(opts.config.cluster.timeout_s) +
           " s: " + std::to_string(job_.nodes.Count(Role::kServer)) + " of " +
           CountOf(opts.num_servers, "server") + " and " +
           std::to_string(job_.nodes.Count(Role::kWorker)) + " of " +
           CountOf(opts.num_workers, "worker") + " registered");
      WriteSummary();
      return 1;
    }
    Message m;
    std::string peer, fatal;
    try {
      if (!ReceiveMessage(socket_, true, 50, &m, &peer)) continue;
      job_.nodes.CountReceived(m.header);
      if (m.header.type == MsgType::kRegister) Register(m, &fatal);
    } catch (const ProtocolVersionError& e) {
      fatal = AnswerOtherRelease(socket_, peer, e);  // a member of the job cannot take part
      ++refused_registrations_;                      // and is answered: no one waits for it
    } catch (const CodecError& e) {
      LOG(ERROR) << "malformed registration ignored: " << e.what();
    }
    if (!fatal.empty()) {
      Fail(fatal);
      WriteSummary();
      const int missing = opts.num_servers + opts.num_workers -
                          static_cast<int>(job_.nodes.size()) - refused_registrations_;
      RefuseLateRegistrations(socket_, job_.nodes, fatal, missing, 5);
      return 1;
    }
  }
  return -1;
}

void Coordinator::WarnIfOpen() const {
  std::set<std::string> hosts = {HostName()};  // the scheduler's own, and every node's
  for (const auto& n : job_.nodes.all()) hosts.insert(n.info.host);
  if (job_.opts.curve || hosts.size() < 2) return;
  std::fprintf(stderr, "[tteps] warning: %s\n", OpenJobWarning(hosts.size()).c_str());
}

// --- what the nodes send ---------------------------------------------------------------------

void Coordinator::ReceiveFor20Ms() {
  Message m;
  std::string peer;
  try {
    // Bounded (a thousand messages, 20 ms), so that a flood of messages cannot starve the
    // checks after it. The views their changes make go out once, after them.
    ViewBatch batch(job_);
    const auto start = Clock::now();
    for (int i = 0;
         i < 1000 && SecondsSince(start) < 0.02 && ReceiveMessage(socket_, true, 20, &m, &peer);
         ++i) {
      HandleMessage(m);
    }
  } catch (const CodecError& e) {
    ++job_.refused;
    // A joiner of another release is answered (the job goes on); other strangers are not.
    const auto* other = dynamic_cast<const ProtocolVersionError*>(&e);
    const std::string what = other ? AnswerOtherRelease(socket_, peer, *other)
                                   : std::string("malformed message ignored: ") + e.what();
    LOG_IF(ERROR, LogThisRefusal(job_.refused))
        << what << " (" << job_.refused << " refused so far)";
  }
}

void Coordinator::HandleMessage(const Message& m) {
  job_.nodes.CountReceived(m.header);
  Node* node = job_.nodes.Find(m.peer);
  if (!node && m.header.type == MsgType::kRegister) return joins_.OnJoin(m);
  if (!node || node->lost) {
    ++job_.refused;
    LOG_IF(ERROR, LogThisRefusal(job_.refused))
        << TypeName(m.header.type) << " from "
        << (node ? node->info.Name() + ", which was declared lost," : "an unregistered peer")
        << " refused (" << job_.refused << " refused so far)";
    // Back from a stop (SIGSTOP, a frozen host) after the job went on without it: it is told
    // to stop.
    if (node) {
      job_.nodes.Shutdown(m.peer,
                          node->info.Name() + " was declared lost; the job went on without it");
    }
    return;
  }
  node->last_seen = Clock::now();
  switch (m.header.type) {
    case MsgType::kHeartbeat:
      heartbeats_.OnHeartbeat(*node, m);
      break;
    case MsgType::kReport:
      if (node->info.role == Role::kWorker) {
        OnWorkerReport(*node, m);
      } else {
        OnServerReport(*node, m.header);
      }
      break;
    case MsgType::kTrace:
      if (trace_) trace_->Append(m.header.text);
      break;
    case MsgType::kError:
      Fail(node->info.Name() + ": " + m.header.text);
      break;
    default:
      LOG(ERROR) << "unexpected " << TypeName(m.header.type) << " from " << node->info.Name();
  }
}

void Coordinator::OnWorkerReport(Node& node, const Message& m) {
  const Header& h = m.header;
  if (topics::kReady.is(h.topic)) {
    if (job_.members.IsJoiner(node.info.id)) return joins_.OnJoinerReady(node);
    OnReady(node);
  } else if (topics::kTrainReport.is(h.topic)) {
    OnTrainReport(node, topics::kTrainReport.Decode(h));
  } else if (topics::kSnapshot.is(h.topic)) {
    OnSnapshot(node, topics::kSnapshot.Decode(h), m);
  } else if (topics::kReleased.is(h.topic)) {
    joins_.OnReleased(node, topics::kReleased.Decode(h));
  } else if (topics::kAccumulationChanged.is(h.topic)) {
    job_.AccumulationChanged(node.info, topics::kAccumulationChanged.Decode(h));
  } else if (topics::kDone.is(h.topic)) {
    OnDone(node, topics::kDone.Decode(h));
  } else if (topics::kLeaving.is(h.topic)) {
    // The job cannot go on without it (its last worker, a mode that cannot lose one): the
    // signal to the worker was one to the job.
    const topics::Leaving leaving = topics::kLeaving.Decode(h);
    if (!failover_.Release(node, leaving)) Interrupt(leaving.signal == "SIGINT" ? SIGINT : SIGTERM);
  } else {
    LOG(ERROR) << "unknown report '" << h.topic << "' from " << node.info.Name() << " ignored";
  }
}

void Coordinator::OnDone(Node& node, const topics::Done& done) {
  if (done.epoch != job_.map.epoch) {  // sent before a rollback it had not heard of yet
    LOG(WARNING) << node.info.Name() << " finished epoch " << done.epoch
                 << ", which was rolled back";
    return;
  }
  node.done = true;
  job_.members.Finish(node.info.id);
  job_.steps_done = std::max(job_.steps_done, done.steps);
  job_.min_steps_done = std::min(job_.min_steps_done, done.steps);
  LOG(INFO) << node.info.Name() << " finished its " << done.steps << " steps";
}

void Coordinator::OnReady(const Node& node) {
  // Every worker has loaded its data and built its model: training starts for all at once,
  // and so does the training clock (the local trainer and DDP do not count set-up either).
  ready_.insert(node.info.id);
  if (!job_.phase.is(Phase::kReady) || static_cast<int>(ready_.size()) != job_.opts.num_workers) {
    return;
  }
  job_.phase.MoveTo(Phase::kTraining);
  train_start_ = Clock::now();
  startup_s_ = ProcessAgeSeconds();
  job_.schedules.Keep();  // those it resumed with, or none: never a former job's beside its own
  // --slices past the workers: who computes them, before the go (the same socket: in order).
  if (job_.members.view().number > 0) job_.SendView(/*now=*/true);
  job_.nodes.Command(Role::kWorker, topics::kGo);
}

void Coordinator::OnTrainReport(const Node& node, TrainReport r) {
  r.worker = node.info.id;  // the sender is who the socket says, whatever the body claims
  const WorkerProgress& p = job_.book.Add(node.info.id, r);
  last_loss_ = job_.book.LiveMeanLoss();
  last_trips_per_s_ = job_.book.LiveTripsPerSecond();
  live_.Train(r);
  if (job_.book.LiveInTallies() >= job_.members.LiveCount()) {  // every live worker reported
    live_.JobStep(job_.MinStep(), last_loss_, last_trips_per_s_, job_.WallSeconds(),
                  [this] { return job_.book.LiveSpread(); });
  }
  progress_line_.Update(p.epoch, job_.MinStep(), last_loss_, last_trips_per_s_);
  job_.policy.Observe(r, job_.members.OwnSliceOf(node.info.id));
  MaybeEvaluate();
}

void Coordinator::OnSnapshot(const Node& node, const topics::Snapshot& snapshot, const Message& m) {
  // The first live worker holds the job's weights (worker 0 until it is lost).
  int first = 0;
  while (job_.members.IsLost(first)) ++first;
  const int64_t params = job_.opts.param_count;
  if (job_.mode.servers() || node.info.role != Role::kWorker || node.info.id != first) {
    LOG(ERROR) << "unexpected snapshot from " << node.info.Name() << " ignored";
    return;
  }
  if (m.payloads.size() != 1 || m.num_floats(0) != static_cast<size_t>(params)) {
    LOG(ERROR) << "malformed snapshot from " << node.info.Name() << " ignored ("
               << m.payloads.size() << " payloads, not one of " << params << " floats)";
    return;
  }
  if (snapshot.final) final_offered_ = true;
  eval_->Offer(snapshot.steps, snapshot.final,
               std::vector<float>(m.floats(0), m.floats(0) + params), TrainSeconds());
}

void Coordinator::OnServerReport(const Node& node, const Header& h) {
  if (server::topics::kStats.is(h.topic)) {
    server_stats_[node.info.id] = server::topics::kStats.Decode(h);
  } else if (server::topics::kNormPartial.is(h.topic)) {
    OnNormPart(node, server::topics::kNormPartial.Decode(h));
  } else {
    LOG(ERROR) << "unknown report '" << h.topic << "' from " << node.info.Name() << " ignored";
  }
}

void Coordinator::OnNormPart(const Node& node, const server::topics::NormPartial& part) {
  // The global norm of a version's aggregate, from every shard. Replicas send the same share:
  // one per range (its first server's) counts.
  if (part.version < 0 || node.info.id < 0 || node.info.id >= job_.Servers()) return;
  std::set<int> groups;
  for (int s = 0; s < job_.Servers(); ++s) groups.insert(ReplicasOf(job_.map, s).front());
  auto& parts = job_.norm_parts[part.version];
  parts.emplace(ReplicasOf(job_.map, node.info.id).front(), part.squared);
  if (parts.size() != groups.size()) return;
  double squared = 0;
  for (const auto& [group, share] : parts) squared += share;  // in range order, as before
  job_.nodes.Command(Role::kServer, server::topics::kNormTotal, {part.version, std::sqrt(squared)});
  job_.norm_parts.erase(part.version);
}

// --- policy, evaluation, budget --------------------------------------------------------------

void Coordinator::SendDecisions() {
  job_.policy.SendDecisions(job_.members, job_.WallSeconds(), SendAccumulation());
}

void Coordinator::FinishPolicy() {
  job_.policy.Finish(job_.members, job_.WallSeconds(), SendAccumulation());
}

PolicyLink::Send Coordinator::SendAccumulation() {
  return [this](int worker, int64_t accumulation) {
    job_.nodes.Command(Role::kWorker, topics::kSetAccumulation, {accumulation}, worker);
  };
}

double Coordinator::TrainSeconds() const {
  if (!job_.phase.reached(Phase::kTraining)) return 0.0;
  return SecondsSince(train_start_) - job_.members.paused_total_s() -
         job_.members.PausedFor(job_.WallSeconds());
}

void Coordinator::MaybeEvaluate() {
  // Without servers, worker 0 holds the weights and sends them on the same schedule.
  if (!job_.mode.servers() || !job_.phase.is(Phase::kTraining)) return;
  // Epochs as worker 0 counts them (it starts each one first; the lowest live worker's once
  // worker 0 is lost), else the step every worker has reached. The final evaluation covers the
  // last step.
  const WorkerProgress first = job_.book.LiveFirst();
  const int64_t step = eval_schedule_.per_epoch() ? first.step : job_.MinStep();
  if (step >= job_.opts.total_steps || !eval_schedule_.Due(step, first.epoch, TrainSeconds())) {
    return;
  }
  eval_->Request(step, false, TrainSeconds());
  eval_schedule_.Taken(step, first.epoch, TrainSeconds());
}

void Coordinator::OnEvaluation(const EvalOutcome& r) {
  if (r.json != "null") {
    progress_line_.set_eval_mape(r.mape);
    live_.Eval(r);
  }
  // Early stopping: every worker stops after the same step, as with the time budget.
  if (evals_.Add(r, job_.phase.is(Phase::kTraining), job_.WallSeconds())) StopTraining();
  if (!r.final) return;
  // Servers may go: they answer with their statistics. Workers, done, wait for this word (a
  // scheduler lost before it is a failure they name).
  for (auto& n : job_.nodes.all()) {
    if (!n.lost) job_.nodes.Shutdown(n.peer, "");
    if (n.info.role == Role::kServer) n.done = true;
  }
  server_stats_deadline_ =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(job_.opts.config.cluster.timeout_s));
}

void Coordinator::StopTraining() {
  if (stop_sent_) return;
  stop_sent_ = true;
  job_.nodes.Command(Role::kWorker, topics::kStop);
}

// --- the loop --------------------------------------------------------------------------------

void Coordinator::AdvancePhase() {
  if (job_.nodes.AllDone(Role::kWorker) && job_.phase.is(Phase::kTraining)) {
    job_.phase.MoveTo(Phase::kDraining);
    train_end_ = Clock::now();
    progress_line_.Update(job_.book.MaxEpoch(), job_.steps_done, last_loss_, last_trips_per_s_,
                          /*force=*/true);
    FinishPolicy();
    if (job_.mode.servers()) {
      eval_->Request(job_.steps_done, true, TrainSeconds());
    } else if (!final_offered_) {
      // Worker 0 sends its final snapshot before it reports done, on the same socket.
      Fail("worker 0 finished without sending its final parameters (see its log)");
    }
  }
  const int stats_in =
      static_cast<int>(server_stats_.size() + job_.members.view().lost_servers.size());
  if (evals_.has_final() && job_.phase.is(Phase::kDraining) &&
      (stats_in == job_.Servers() || Clock::now() > server_stats_deadline_)) {
    job_.phase.MoveTo(Phase::kDone);
  }
}

void Coordinator::Fail(const std::string& reason) {
  if (job_.phase.is(Phase::kFailed) || job_.phase.is(Phase::kDone)) return;
  job_.phase.MoveTo(Phase::kFailed);
  failure_ = reason;
  LOG(ERROR) << "job failed: " << reason;
  job_.nodes.Broadcast(reason);
}

void Coordinator::Interrupt(int sig) {
  if (job_.phase.is(Phase::kFailed) || job_.phase.is(Phase::kDone)) return;
  job_.phase.MoveTo(Phase::kFailed);
  interrupted_ = sig;
  const std::string reason = "the job was interrupted (" + SignalName(sig) + ")";
  LOG(WARNING) << reason << " at step " << job_.MinStep();
  job_.nodes.Broadcast(reason);
}

int Coordinator::Run() {
  job_.start = Clock::now();
  // 1. Registration.
  if (const int code = RegisterAll(); code >= 0) return code;
  job_.SendFirstMaps();
  WarnIfOpen();
  job_.phase.MoveTo(Phase::kReady);
  eval_->Start(job_.map);
  train_start_ = Clock::now();

  // 2. Training, then draining: until every worker is done and the final evaluation and the
  // servers' statistics are in, or a failure.
  while (!job_.phase.is(Phase::kFailed) && !job_.phase.is(Phase::kDone)) {
    if (const int sig = InterruptSignal()) {
      Interrupt(sig);
      break;
    }
    ReceiveFor20Ms();
    while (auto r = eval_->Poll()) {
      if (!r->error.empty()) {
        Fail("evaluation failed: " + r->error);
        break;
      }
      OnEvaluation(*r);
    }
    if (job_.phase.is(Phase::kFailed)) break;
    SendDecisions();
    MaybeEvaluate();
    const double budget = job_.opts.config.train.max_train_s;
    if (budget > 0 && !stop_sent_ && TrainSeconds() >= budget) {
      LOG(INFO) << "time budget of " << budget << " s (--max_train_s) spent: telling the "
                << "workers to stop";
      StopTraining();
    }
    if (std::string why = failover_.CheckSilence(); !why.empty()) Fail(why);
    if (std::string why = joins_.CheckMinWorkers(); !why.empty()) Fail(why);
    if (std::string why = heartbeats_.CheckLongSteps(); !why.empty()) Fail(why);
    if (auto what = release_requests_.Take()) release_requests_.Answer(failover_.AskToLeave(*what));
    live_.Publish([this] { return Gauges(); });
    AdvancePhase();
  }
  FinishPolicy();  // a failed job: stop the agent too
  WriteSummary();
  if (interrupted_ != 0) return 128 + interrupted_;
  if (job_.phase.is(Phase::kFailed)) return 1;
  std::printf("%s\n", JsonObject()
                          .AddRaw("final_eval", evals_.final_json())
                          .Add("mode", job_.mode.name())
                          .Add("out_dir", job_.out->dir())
                          .str()
                          .c_str());
  return 0;
}

void Coordinator::WriteSummary() {
  JobFacts f;
  f.opts = &job_.opts;
  f.book = &job_.book;
  f.server_stats = &server_stats_;
  f.status = interrupted_ != 0 ? "interrupted" : failure_.empty() ? "done" : "failed";
  if (interrupted_ != 0) f.signal = SignalName(interrupted_);
  f.error = failure_;
  f.servers = job_.Servers();
  f.steps = job_.phase.is(Phase::kFailed) ? job_.MinStep()
            : job_.steps_done > 0         ? job_.steps_done
                                          : job_.opts.total_steps;
  f.steps_redone = job_.steps_redone;
  f.stopped_by_time_budget = stop_sent_ && job_.min_steps_done < job_.opts.total_steps;
  // A job that ended before training began trained for no time.
  const Clock::time_point end = train_end_ != Clock::time_point{} ? train_end_ : Clock::now();
  f.train_s = train_start_ == Clock::time_point{}
                  ? 0.0
                  : std::chrono::duration<double>(end - train_start_).count();
  f.wall_s = job_.WallSeconds();
  f.startup_s = startup_s_;
  const MemoryPeaks mem = PeakMemory();
  f.rss_mb = PeakRssMb();
  f.private_mb = mem.private_mb;
  f.shared_mb = mem.shared_mb;
  f.refused = job_.refused;
  f.decisions = job_.policy.on() ? job_.policy.decisions() : -1;
  f.policy_error = job_.policy.error();
  f.policy_record = job_.policy.record();
  f.final_eval = evals_.final_json();
  f.best_eval = evals_.best_json();
  f.early_stop = evals_.early_stop_json();
  f.membership = job_.log.Json();
  f.control_messages = job_.nodes.Traffic().str();
  if (!f.final_eval.empty()) {
    f.model = job_.out->Path("model.pt");
    f.model_last = job_.out->Path("model_last.pt");
  }
  job_.out->WriteSummary(SummaryJson(f));
}

JobGauges Coordinator::Gauges() const {
  JobGauges g;
  g.mode = job_.mode.name();
  g.phase = PhaseName(job_.phase.get());
  g.step = job_.MinStep();
  g.planned_steps = job_.opts.total_steps;
  g.trips_per_s = last_trips_per_s_;
  g.loss = last_loss_;
  g.train_s = TrainSeconds();
  g.workers_live = job_.members.LiveCount();
  g.workers_lost = static_cast<int>(job_.members.lost().size());
  g.membership_events = static_cast<int64_t>(job_.log.size());
  g.refused_messages = job_.refused;
  return g;
}

}  // namespace tteps::scheduler
