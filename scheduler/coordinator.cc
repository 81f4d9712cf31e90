#include "scheduler/coordinator.h"

#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "common/bootstrap.h"
#include "common/cereal_body.h"
#include "common/clock.h"
#include "common/codec.h"
#include "common/interrupt.h"
#include "common/json_writer.h"
#include "common/log_file.h"
#include "common/peak_memory.h"
#include "common/run_output.h"
#include "scheduler/membership.h"
#include "scheduler/placement.h"
#include "server/checkpoint.h"
#include "server/topics.h"
#include "worker/topics.h"

namespace tteps::scheduler {
namespace {

// A worker's train report as the accumulation policy's window report.
ppo::WindowReport ToWindowReport(const TrainReport& t) {
  ppo::WindowReport r;
  r.worker = t.worker;
  r.step = t.step;
  r.alpha = std::max<int64_t>(1, t.accumulation);
  r.extra = std::max<int64_t>(0, t.adopted);
  r.trips = t.trips;
  r.window_s = t.window_s;
  r.compute_s = t.compute_s;
  r.wait_s = t.wait_s;
  r.staleness = t.Exchange("staleness");
  r.losses = t.step_losses;
  r.step_compute_s = t.step_compute_s;
  r.step_alpha = t.step_accumulation;
  r.noise_steps = t.noise_steps;
  r.noise = t.noise;
  r.step_s = r.losses.empty() ? 0 : r.window_s / r.losses.size();
  return r;
}

}  // namespace

Coordinator::Coordinator(zmq::socket_t& socket, CoordinatorOptions opts, Evaluation* eval,
                         RunOutput* out, AccumulationPolicy* policy)
    : socket_(socket),
      opts_(std::move(opts)),
      mode_(opts_.config.exchange.mode),
      eval_(eval),
      out_(out),
      policy_(policy),
      progress_line_(ModeName(mode_), opts_.total_steps, opts_.config.train.progress_s),
      eval_schedule_(opts_.config.train.eval),
      patience_(opts_.config.train.patience),
      schedules_(opts_.num_workers, opts_.config.exchange.accumulation, opts_.config.output),
      members_(mode_, opts_.num_workers) {}

Coordinator::Node* Coordinator::Find(const std::string& peer) {
  for (auto& n : nodes_) {
    if (n.peer == peer) return &n;
  }
  return nullptr;
}

std::string Coordinator::DataMismatch(const NodeInfo& info) const {
  // A worker without its own --train_data reads the job's and checks it once loaded.
  if (info.role != Role::kWorker || info.data_path.empty() ||
      info.data_checksum == opts_.data_checksum) {
    return "";
  }
  return "worker on host " + info.host + " (pid " + std::to_string(info.pid) +
         "): its training data '" + info.data_path + "' " +
         (info.data_checksum.empty() ? std::string("is not a trip store")
                                     : "is the store " + info.data_checksum) +
         ", the scheduler's '" + opts_.data_path + "' " +
         (opts_.data_checksum.empty() ? std::string("is not a trip store")
                                      : "is the store " + opts_.data_checksum) +
         ": every host needs the same data (a copy, or a shared file system)";
}

bool Coordinator::Register(const Message& m, std::string* error, bool* fatal) {
  NodeInfo info;
  DecodeBody(m.header.text, &info);
  *fatal = false;
  const int expected = info.role == Role::kServer ? opts_.num_servers : opts_.num_workers;
  if (info.role == Role::kScheduler) {
    *error = "a second scheduler tried to register";
    return false;
  }
  int taken = 0;
  for (const auto& n : nodes_) taken += n.info.role == info.role;
  if (taken >= expected) {
    *error = std::string("the job already has its ") + std::to_string(expected) + " " +
             RoleName(info.role) + "s";
    return false;
  }
  if (info.id < 0) info.id = taken;  // started without MPI: ids in order of registration
  for (const auto& n : nodes_) {
    if (n.info.role == info.role && n.info.id == info.id) {
      *error = std::string(RoleName(info.role)) + " id " + std::to_string(info.id) + " is taken";
      return false;
    }
  }
  // A member of the job that cannot read the job's data: the job cannot run.
  if (std::string why = DataMismatch(info); !why.empty()) {
    *error = std::move(why);
    *fatal = true;
    return false;
  }
  nodes_.push_back({info, m.peer, Clock::now(), false});
  LOG(INFO) << "registered " << info.Name()
            << (info.endpoint.empty() ? "" : " at " + info.endpoint);
  return true;
}

void Coordinator::SendMaps() {
  map_.param_count = opts_.param_count;
  map_.fingerprint = opts_.fingerprint;
  map_.config = opts_.config;
  map_.resume_version = opts_.resume_version;
  map_.start_steps = opts_.start_steps;
  schedules_.Restore(opts_.schedules);
  map_.schedules = schedules_.Encoded();
  map_.data_checksum = opts_.data_checksum;
  for (size_t w = 0; w < opts_.start_steps.size(); ++w) book_.SetStep(w, opts_.start_steps[w]);
  map_.servers.assign(opts_.num_servers, {});
  map_.workers.assign(opts_.num_workers, {});
  for (const auto& n : nodes_) {
    (n.info.role == Role::kServer ? map_.servers : map_.workers).at(n.info.id) = n.info;
  }
  if (!opts_.resume_ranges.empty()) {
    map_.ranges = opts_.resume_ranges;  // the checkpoint's, which a server restores only whole
  } else if (opts_.num_servers > 0) {
    std::vector<double> weights(opts_.num_servers, 1.0);
    if (opts_.config.exchange.balance_links) {
      std::vector<std::string> server_hosts, worker_hosts;
      for (const auto& s : map_.servers) server_hosts.push_back(s.host);
      for (const auto& w : map_.workers) worker_hosts.push_back(w.host);
      weights = LinkBalancedWeights(server_hosts, worker_hosts);
    }
    // --replicas R: S / R ranges, each held by R servers (server s: range s % (S / R)).
    const int replicas = opts_.config.cluster.replicas, distinct = opts_.num_servers / replicas;
    weights.resize(distinct);
    const std::vector<KeyRange> parts = PartitionKeys(opts_.param_count, weights, opts_.light_keys);
    map_.ranges.clear();
    for (int s = 0; s < opts_.num_servers; ++s) map_.ranges.push_back(parts[s % distinct]);
  }
  for (auto& n : nodes_) {
    n.last_seen = Clock::now();  // heartbeats start once a node has its map
    ClusterMap m = map_;
    m.your_id = n.info.id;
    Header h;
    h.type = MsgType::kClusterMap;
    h.sender_role = Role::kScheduler;
    h.text = EncodeBody(m);
    SendMessage(socket_, h, {}, n.peer);
  }
  for (size_t s = 0; s < map_.servers.size(); ++s) {
    LOG(INFO) << map_.servers[s].Name() << " holds " << map_.ranges[s].ToString();
  }
}

void Coordinator::WarnIfOpen() const {
  std::set<std::string> hosts = {HostName()};  // the scheduler's own, and every node's
  for (const auto& n : nodes_) hosts.insert(n.info.host);
  if (opts_.curve || hosts.size() < 2) return;
  std::fprintf(stderr,
               "[tteps] warning: the job spans %zu hosts without authentication: anyone who "
               "reaches its ports can push to it (make keys with tteps-keygen DIR and pass "
               "--curve_dir DIR)\n",
               hosts.size());
}

void Coordinator::Broadcast(const std::string& reason) {
  Header h;
  h.type = MsgType::kShutdown;
  h.sender_role = Role::kScheduler;
  h.text = reason;
  for (const auto& n : nodes_) SendMessage(socket_, h, {}, n.peer);
}

void Coordinator::Fail(const std::string& reason) {
  if (phase_.is(Phase::kFailed) || phase_.is(Phase::kDone)) return;
  phase_.MoveTo(Phase::kFailed);
  failure_ = reason;
  LOG(ERROR) << "job failed: " << reason;
  Broadcast(reason);
}

void Coordinator::Interrupt(int sig) {
  if (phase_.is(Phase::kFailed) || phase_.is(Phase::kDone)) return;
  phase_.MoveTo(Phase::kFailed);
  interrupted_ = sig;
  const std::string reason = "the job was interrupted (" + SignalName(sig) + ")";
  LOG(WARNING) << reason << " at step " << MinStep();
  Broadcast(reason);
}

void Coordinator::OnReady(const Node& node) {
  // Every worker has loaded its data and built its model: training starts for all at once,
  // and so does the training clock (the local trainer and DDP do not count set-up either).
  ready_.insert(node.info.id);
  if (!phase_.is(Phase::kReady) || static_cast<int>(ready_.size()) != opts_.num_workers) return;
  phase_.MoveTo(Phase::kTraining);
  train_start_ = Clock::now();
  startup_s_ = ProcessAgeSeconds();
  schedules_.Keep();  // those it resumed with, or none: never a former job's beside its checkpoints
  Command(Role::kWorker, topics::kGo);
}

void Coordinator::Command(Role role, const char* topic, int64_t step, int64_t samples, double norm,
                          int only_id, const std::string& text) {
  Header h;
  h.type = MsgType::kCommand;
  h.sender_role = Role::kScheduler;
  h.topic = topic;
  h.step = step;
  h.samples = samples;
  h.norm = norm;
  h.text = text;
  for (const auto& n : nodes_) {
    if (n.info.role != role || n.done || (only_id >= 0 && n.info.id != only_id)) continue;
    SendMessage(socket_, h, {}, n.peer);
  }
}

void Coordinator::OnTrainReport(const Node& node, const std::string& body) {
  TrainReport r = DecodeCereal<TrainReport>(body);
  r.worker = node.info.id;  // the sender is who the socket says, whatever the body claims
  out_->AppendMetrics(r.ToJson());
  const WorkerProgress& p = book_.Add(node.info.id, r);
  last_loss_ = book_.MeanLoss(members_.lost());
  last_trips_per_s_ = book_.TripsPerSecond(members_.lost());
  progress_line_.Update(p.epoch, MinStep(), last_loss_, last_trips_per_s_);
  if (policy_) {
    ppo::WindowReport window = ToWindowReport(r);
    window.worker = members_.OwnSliceOf(node.info.id);  // a joiner's window is its slice's
    policy_->Observe(window);
  }
  MaybeEvaluate();
}

void Coordinator::MaybeEvaluate() {
  // Without servers, worker 0 holds the weights and sends them on the same schedule.
  if (!UsesServers(mode_) || !phase_.is(Phase::kTraining)) return;
  // Epochs as worker 0 counts them (it starts each one first), else the step every worker has
  // reached. The final evaluation covers the last step.
  // (the lowest live worker's, once worker 0 is lost)
  const WorkerProgress first = book_.First(members_.lost());
  const int64_t epochs = first.epoch;
  const int64_t step = eval_schedule_.per_epoch() ? first.step : MinStep();
  if (step >= opts_.total_steps || !eval_schedule_.Due(step, epochs, TrainSeconds())) return;
  eval_->Request(step, false, TrainSeconds());
  eval_schedule_.Taken(step, epochs, TrainSeconds());
}

JsonObject Coordinator::PeakMemoryJson(double WorkerProgress::*worker_field,
                                       double server::ServerStats::*server_field,
                                       double scheduler) const {
  std::vector<double> servers;
  for (const auto& [id, stats] : server_stats_) servers.push_back(stats.*server_field);
  return JsonObject()
      .Add("scheduler", scheduler)
      .Add("workers", book_.Peaks(worker_field))
      .Add("servers", servers);
}

int64_t Coordinator::MinStep() const { return book_.MinStep(members_.lost()); }

double Coordinator::TrainSeconds() const {
  if (!phase_.reached(Phase::kTraining)) return 0.0;
  return SecondsSince(train_start_) - members_.paused_total_s() -
         members_.PausedFor(SecondsSince(start_));
}

void Coordinator::MaybeStopForBudget() {
  if (opts_.config.train.max_train_s <= 0 || stop_sent_ ||
      TrainSeconds() < opts_.config.train.max_train_s)
    return;
  stop_sent_ = true;
  LOG(INFO) << "time budget of " << opts_.config.train.max_train_s
            << " s (--max_train_s) spent: telling the workers to stop";
  Command(Role::kWorker, topics::kStop);
}

void Coordinator::OnSnapshot(const Node& node, const Message& m) {
  // The first live worker holds the job's weights (worker 0 until it is lost).
  int first = 0;
  while (members_.IsLost(first)) ++first;
  if (UsesServers(mode_) || node.info.role != Role::kWorker || node.info.id != first) {
    LOG(ERROR) << "unexpected snapshot from " << node.info.Name() << " ignored";
    return;
  }
  if (m.payloads.size() != 1 || m.num_floats(0) != static_cast<size_t>(opts_.param_count)) {
    LOG(ERROR) << "malformed snapshot from " << node.info.Name() << " ignored ("
               << m.payloads.size() << " payloads, not one of " << opts_.param_count << " floats)";
    return;
  }
  const bool final = m.header.samples == 1;
  if (final) final_offered_ = true;
  eval_->Offer(m.header.step, final,
               std::vector<float>(m.floats(0), m.floats(0) + opts_.param_count), TrainSeconds());
}

void Coordinator::SendDecisions() {
  if (!policy_) return;
  while (auto d = policy_->Poll()) {
    // A slice's decision goes to the worker whose own slice it is: its first worker, or the one
    // that joined for it. A lost worker's slice computed by another follows its schedule.
    const int owner = members_.OwnerOf(d->worker);
    if (owner < 0 || members_.OwnSliceOf(owner) != d->worker || members_.IsLost(owner)) {
      LOG(INFO) << "decision for the slice of worker " << d->worker
                << " not sent: " << (owner < 0 ? "no such slice" : "its worker was lost");
      continue;
    }
    Command(Role::kWorker, topics::kSetAccumulation, 0, d->new_alpha, -1, owner);
    ++decisions_;
    JsonObject line;
    line.Add("type", "decision")
        .Add("worker", d->worker)
        .Add("step", d->step)
        .Add("wall_s", SecondsSince(start_))
        .Add("action", d->action)
        .Add("old_accumulation", d->old_alpha)
        .Add("new_accumulation", d->new_alpha)
        .Add("observation", std::vector<double>(d->observation.begin(), d->observation.end()));
    if (d->has_reward) line.Add("reward", d->reward);
    out_->AppendMetrics(line);
  }
}

void Coordinator::FinishPolicy() {
  if (!policy_ || policy_finished_) return;
  policy_finished_ = true;
  policy_error_ = policy_->Finish();
  SendDecisions();  // record the last ones (the workers are done: nothing is sent)
  if (!policy_error_.empty()) LOG(ERROR) << policy_error_;
}

void Coordinator::HandleMessage(const Message& m) {
  Node* node = Find(m.peer);
  if (!node && m.header.type == MsgType::kRegister) return OnJoin(m);
  if (!node) {
    ++refused_;
    LOG_IF(ERROR, LogThisRefusal(refused_))
        << "message " << TypeName(m.header.type) << " from an unregistered peer ignored ("
        << refused_ << " refused so far)";
    return;
  }
  node->last_seen = Clock::now();
  if (node->lost) {
    // Back from a stop (SIGSTOP, a frozen host) after the job went on without it: whatever it
    // sends is refused, and it is told to stop.
    ++refused_;
    LOG_IF(ERROR, LogThisRefusal(refused_))
        << TypeName(m.header.type) << " from " << node->info.Name()
        << ", which was declared lost, refused";
    Header h;
    h.type = MsgType::kShutdown;
    h.sender_role = Role::kScheduler;
    h.text = node->info.Name() + " was declared lost; the job went on without it";
    SendMessage(socket_, h, {}, m.peer);
    return;
  }
  switch (m.header.type) {
    case MsgType::kHeartbeat: {
      Header ack;
      ack.type = MsgType::kHeartbeat;
      ack.sender_role = Role::kScheduler;
      SendMessage(socket_, ack, {}, m.peer);
      break;
    }
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

void Coordinator::OnAccumulationChanged(const Node& node, const Header& h) {
  const int slice = members_.OwnSliceOf(node.info.id);
  const double acc = h.norm;
  if (slice < 0 || slice >= opts_.num_workers || members_.OwnerOf(slice) != node.info.id ||
      !(acc >= 1) || acc != std::floor(acc) || acc > 1e9) {
    LOG(ERROR) << "accumulation change " << acc << " from " << node.info.Name() << " ignored";
    return;
  }
  try {
    schedules_.Add(slice, {h.step, h.samples, static_cast<int64_t>(acc)});
    LOG(INFO) << node.info.Name() << " draws " << static_cast<int64_t>(acc)
              << " micro-batches a step from step " << h.step + 1 << " (its slice's stream at "
              << h.samples << ")";
  } catch (const std::invalid_argument& e) {
    LOG(ERROR) << "accumulation change from " << node.info.Name() << " ignored: " << e.what();
  }
}

void Coordinator::OnWorkerReport(Node& node, const Message& m) {
  const std::string& topic = m.header.topic;
  if (topic == topics::kReady) {
    if (members_.IsJoiner(node.info.id)) return OnJoinerReady(node);
    OnReady(node);
  } else if (topic == topics::kTrainReport) {
    OnTrainReport(node, m.header.text);
  } else if (topic == topics::kSnapshot) {
    OnSnapshot(node, m);
  } else if (topic == topics::kReleased) {
    OnReleased(node, m.header);
  } else if (topic == topics::kAccumulationChanged) {
    OnAccumulationChanged(node, m.header);
  } else if (topic == topics::kDone) {
    if (m.header.samples != map_.epoch) {  // sent before a rollback it had not heard of yet
      LOG(WARNING) << node.info.Name() << " finished epoch " << m.header.samples
                   << ", which was rolled back";
      return;
    }
    node.done = true;
    members_.Finish(node.info.id);
    steps_done_ = std::max(steps_done_, m.header.step);
    min_steps_done_ = std::min(min_steps_done_, m.header.step);
    LOG(INFO) << node.info.Name() << " finished its " << m.header.step << " steps";
  } else {
    LOG(ERROR) << "unknown report '" << topic << "' from " << node.info.Name() << " ignored";
  }
}

void Coordinator::OnServerReport(const Node& node, const Header& h) {
  if (h.topic == server::topics::kStats) {
    server_stats_[node.info.id] = DecodeCereal<server::ServerStats>(h.text);
  } else if (h.topic == server::topics::kNormPartial) {
    // Clipping in sync mode: the global norm of a version's aggregate, from every shard.
    // Replicas send the same share: one per range counts.
    if (h.step < 0 || node.info.id < 0 || node.info.id >= Servers()) return;
    auto& parts = norm_parts_[h.step];
    parts.emplace(RangeGroup(node.info.id), h.norm);
    if (static_cast<int>(parts.size()) == RangeGroups()) {
      double squared = 0;
      for (const auto& [group, part] : parts) squared += part;  // in range order, as before
      Command(Role::kServer, server::topics::kNormTotal, h.step, 0, std::sqrt(squared));
      norm_parts_.erase(h.step);
    }
  } else {
    LOG(ERROR) << "unknown report '" << h.topic << "' from " << node.info.Name() << " ignored";
  }
}

int Coordinator::RangeGroup(int server) const { return ReplicasOf(map_, server).front(); }

int Coordinator::RangeGroups() const {
  std::set<int> groups;
  for (int s = 0; s < Servers(); ++s) groups.insert(RangeGroup(s));
  return static_cast<int>(groups.size());
}

bool Coordinator::CanLose(const Node& n) const {
  if (n.info.role == Role::kServer) {
    if (!phase_.is(Phase::kReady) && !phase_.is(Phase::kTraining) && !phase_.is(Phase::kDraining)) {
      return false;
    }
    for (int r : ReplicasOf(map_, n.info.id)) {
      if (r != n.info.id && !lost_servers_.count(r)) return true;  // a live replica
    }
    return false;
  }
  if (n.info.role != Role::kWorker || !phase_.is(Phase::kTraining)) return false;
  // Sync and ring: an adopted slice is drawn on by its schedule (the accumulations its worker
  // reported). The ring goes on only over links it can rebuild (TCP).
  const ExchangeConfig& x = opts_.config.exchange;
  const bool sync_can = mode_ == Mode::kSync;
  const bool ring_can = mode_ == Mode::kRing && x.allreduce == "ring" && x.ring_transport == "tcp";
  if (mode_ != Mode::kAsync && mode_ != Mode::kSsp && !sync_can && !ring_can) return false;
  // Never the last one: someone must finish the job (or has: a worker lost after the others
  // finished left nothing undone, its last slice being part of their last step).
  return std::any_of(nodes_.begin(), nodes_.end(), [&](const Node& o) {
    return o.info.role == Role::kWorker && !o.lost && o.info.id != n.info.id;
  });
}

void Coordinator::DeclareLost(Node& n, double silent_s) {
  n.done = true;
  n.lost = true;
  const int id = n.info.id;
  const int64_t step = book_.StepOf(id);
  const MembershipChange change = members_.Lose(id, step);
  Apply(change);
  const int live = members_.ActiveCount();
  const bool slices = mode_ == Mode::kSync || mode_ == Mode::kRing;
  JsonObject event;
  event.Add("event", "lost")
      .Add("worker", id)
      .Add("rank", n.info.mpi_rank)
      .Add("last_reported_step", step)
      .Add("silent_s", silent_s)
      .Add("wall_s", SecondsSince(start_))
      .Add("workers_left", live)
      .Add("view", members_.view().epoch);
  if (slices) {
    std::string list = "[";
    for (size_t i = 0; i < change.adopters.size(); ++i) {
      list += (i ? "," : "") + std::to_string(change.adopters[i]);
    }
    event.AddRaw("slices_to", list + "]");
  }
  const std::string text = n.info.Name() + " lost (silent " + std::to_string(int(silent_s)) +
                           " s, last reported step " + std::to_string(step) + "); " +
                           ModeName(mode_) + " goes on with " + std::to_string(live) + " workers" +
                           (change.adopters.empty() ? ""
                                                    : ", its slice computed by worker " +
                                                          std::to_string(change.adopters.front()));
  RecordMembership(event, text);
  Command(Role::kServer, server::topics::kWorkerLost, id);
  Command(Role::kWorker, topics::kPeerLost, id);
  NoteLostPeer();
}

void Coordinator::Apply(const MembershipChange& change) {
  if (policy_) {
    for (int slice : change.orphaned)
      policy_->SetOrphaned(slice, schedules_.LastAccumulationOf(slice));
    for (int slice : change.owned) policy_->SetOwned(slice);
  }
  for (const MembershipCommand& c : change.commands) {
    switch (c.kind) {
      case MembershipCommand::kAdopt:
        Command(Role::kWorker, topics::kAdoptSlice, c.slice, 0, -1, c.worker,
                schedules_.Text(c.slice));
        break;
      case MembershipCommand::kRelease:
        Command(Role::kWorker, topics::kReleaseSlice, c.slice, 0, -1, c.worker);
        break;
      case MembershipCommand::kGo:
        // With the slice's schedule: the joiner draws what its lost worker would have.
        Command(Role::kWorker, topics::kGo, c.step, 0, -1, c.worker, schedules_.Text(c.slice));
        PauseIfShort(c.worker, c.step);
        break;
    }
  }
}

void Coordinator::RecordMembership(const JsonObject& event, const std::string& console) {
  membership_.push_back(event.str());
  JsonObject line;
  line.Add("type", "membership").AddMembers(event.str());
  out_->AppendMetrics(line);
  LOG(WARNING) << console;
  std::fprintf(stderr, "[tteps] %s\n", console.c_str());  // one console line per event
}

void Coordinator::DeclareServerLost(Node& n, double silent_s) {
  n.done = true;
  n.lost = true;
  const int id = n.info.id;
  lost_servers_.insert(id);
  int promoted = -1;  // the range's first live server: the one the workers now read
  for (int r : ReplicasOf(map_, id)) {
    if (!lost_servers_.count(r)) {
      promoted = r;
      break;
    }
  }
  int live = 0;
  for (const auto& o : nodes_) live += o.info.role == Role::kServer && !o.lost;
  JsonObject event;
  event.Add("event", "server lost")
      .Add("server", id)
      .Add("rank", n.info.mpi_rank)
      .Add("range", map_.ranges.at(id).ToString())
      .Add("step", MinStep())
      .Add("silent_s", silent_s)
      .Add("wall_s", SecondsSince(start_))
      .Add("servers_left", live)
      .Add("served_by", promoted);
  RecordMembership(event, n.info.Name() + " lost (silent " +
                              std::to_string(static_cast<int>(silent_s)) + " s, at step " +
                              std::to_string(MinStep()) + "); server " + std::to_string(promoted) +
                              " serves " + map_.ranges.at(id).ToString() + " from its replica");
  // Finished workers too: they leave MPI without waiting for the lost rank.
  Header h;
  h.type = MsgType::kCommand;
  h.sender_role = Role::kScheduler;
  h.step = id;
  for (const auto& o : nodes_) {
    if (o.lost) continue;
    h.topic = o.info.role == Role::kServer ? server::topics::kServerLost : topics::kServerLost;
    SendMessage(socket_, h, {}, o.peer);
  }
  eval_->LoseServer(id);
  NoteLostPeer();
}

std::string Coordinator::JoinRefusal(const NodeInfo& info, int* slice) const {
  if (info.role != Role::kWorker) {
    return std::string("a ") + RoleName(info.role) + " cannot join a running job";
  }
  if (std::string why = DataMismatch(info); !why.empty()) return why;
  if (!phase_.is(Phase::kTraining)) {
    return std::string("the job is ") + PhaseName(phase_.get()) + ", not training";
  }
  return members_.JoinRefusal(slice);
}

void Coordinator::OnJoin(const Message& m) {
  NodeInfo info;
  std::string error;
  int slice = -1;
  try {
    DecodeBody(m.header.text, &info);
    error = JoinRefusal(info, &slice);
  } catch (const CodecError& e) {
    error = std::string("garbled registration: ") + e.what();
  }
  if (!error.empty()) {
    ++refused_;
    LOG(ERROR) << "a worker asked to join (" << info.host << ", pid " << info.pid
               << ") and was refused: " << error;
    Header h;
    h.type = MsgType::kShutdown;
    h.sender_role = Role::kScheduler;
    h.text = "cannot join: " + error;
    SendMessage(socket_, h, {}, m.peer);
    return;
  }
  const int id = members_.Join(slice);
  info.id = id;
  nodes_.push_back({info, m.peer, Clock::now(), false});
  ClusterMap map = map_;
  map.your_id = id;
  map.own_slice = slice;
  Header h;
  h.type = MsgType::kClusterMap;
  h.sender_role = Role::kScheduler;
  h.text = EncodeBody(map);
  SendMessage(socket_, h, {}, m.peer);
  LOG(WARNING) << "registered " << info.Name() << ", joining: it will compute the slice of worker "
               << slice
               << (mode_ == Mode::kSync
                       ? " (now worker " + std::to_string(members_.OwnerOf(slice)) + "'s)"
                       : " (its place)");
}

int64_t Coordinator::PlaceStep(int place) const {
  // Whoever held the place last reported the furthest step: its first worker, or a joiner for it
  // that was lost in turn.
  int64_t step = 0;
  for (int holder : members_.HoldersOf(place)) {
    step = std::max(step, book_.StepOf(holder));
  }
  return step;
}

void Coordinator::OnJoinerReady(const Node& node) {
  const int slice = members_.OwnSliceOf(node.info.id);
  if (mode_ == Mode::kSync) {
    // Loaded and built: the slice's adopter leaves it at its next step boundary.
    Apply(members_.JoinerReady(node.info.id, 0));
    return;
  }
  // Async / SSP: it starts where the lost worker last reported, and the servers count its
  // pushes for that place (SSP: its clock holds the others' pulls again) before it pushes.
  const int64_t start = PlaceStep(slice);
  Command(Role::kServer, server::topics::kWorkerJoined, slice, node.info.id,
          static_cast<double>(start));
  Apply(members_.JoinerReady(node.info.id, start));
  JsonObject event;
  event.Add("event", "join")
      .Add("worker", node.info.id)
      .Add("slice", slice)
      .Add("step", start)
      .Add("wall_s", SecondsSince(start_))
      .Add("workers_live", members_.LiveCount())
      .Add("view", members_.view().epoch);
  RecordMembership(event, node.info.Name() + " joined: it takes worker " + std::to_string(slice) +
                              "'s place from step " + std::to_string(start + 1));
}

void Coordinator::OnReleased(const Node& node, const Header& h) {
  const int slice = static_cast<int>(h.samples);
  MembershipChange change;
  try {
    change = members_.Released(node.info.id, slice, h.step);
  } catch (const std::invalid_argument& e) {
    LOG(ERROR) << e.what();
    return;
  }
  Apply(change);
  if (change.owned.empty()) {
    LOG(WARNING) << "the worker joining for slice " << slice << " is gone; " << node.info.Name()
                 << " computes it again";
    return;
  }
  const int joiner = members_.OwnerOf(slice);
  std::string name = "worker " + std::to_string(joiner);
  for (const auto& o : nodes_) {
    if (o.info.role == Role::kWorker && o.info.id == joiner) name = o.info.Name();
  }
  JsonObject event;
  event.Add("event", "join")
      .Add("worker", joiner)
      .Add("slice", slice)
      .Add("from_worker", node.info.id)
      .Add("step", h.step)
      .Add("wall_s", SecondsSince(start_))
      .Add("workers_live", members_.LiveCount())
      .Add("view", members_.view().epoch);
  RecordMembership(event, name + " joined: it computes the slice of worker " +
                              std::to_string(slice) + " from step " + std::to_string(h.step + 1) +
                              " (worker " + std::to_string(node.info.id) + " computed it before)");
}

void Coordinator::PauseIfShort(int worker, int64_t step) {
  // Still too few with it: it waits with the others (the resume goes to every worker).
  if (members_.paused()) Command(Role::kWorker, topics::kPause, step, 1, 0, worker, pause_text_);
}

void Coordinator::CheckMinWorkers() {
  const int want = opts_.config.cluster.min_workers;
  if (want <= 0 || !phase_.is(Phase::kTraining)) return;
  std::string lost;
  for (const auto& n : nodes_) {
    if (n.info.role == Role::kWorker && n.lost) lost += (lost.empty() ? "" : ", ") + n.info.Name();
  }
  const int live = members_.LiveCount();
  const int64_t step = book_.MaxStep(members_.lost());  // the furthest a live worker reported
  const double now_s = SecondsSince(start_), paused_s = members_.PausedFor(now_s);
  const int wait_s = static_cast<int>(opts_.config.cluster.timeout_s);
  JsonObject event;
  switch (members_.CheckQuorum(want, step, now_s)) {
    case Membership::Quorum::kResumed:
      Command(Role::kWorker, topics::kPause, step, 0, 0, -1, "");
      event.Add("event", "resume").Add("step", step).Add("paused_s", paused_s);
      event.Add("wall_s", now_s).Add("workers_live", live).Add("view", members_.view().epoch);
      RecordMembership(event, std::to_string(live) +
                                  " workers live again: training goes on after " +
                                  std::to_string(static_cast<int>(paused_s)) + " s of pause");
      return;
    case Membership::Quorum::kPaused:
      pause_text_ = std::to_string(live) + " workers live, fewer than --min_workers " +
                    std::to_string(want) + ": training pauses; the job fails unless one " +
                    "joins within " + std::to_string(wait_s) +
                    " s (tteps-worker --scheduler ADDRESS); lost: " + lost;
      Command(Role::kWorker, topics::kPause, step, 1, 0, -1, pause_text_);
      event.Add("event", "pause").Add("step", step).Add("wall_s", now_s);
      event.Add("workers_live", live).Add("min_workers", want).Add("view", members_.view().epoch);
      RecordMembership(event, pause_text_);
      break;
    case Membership::Quorum::kUnchanged:
      break;
  }
  if (members_.PausedFor(now_s) > opts_.config.cluster.timeout_s) {
    Fail("only " + std::to_string(live) + " of --min_workers " + std::to_string(want) +
         " workers live for " + std::to_string(wait_s) +
         " s (--timeout_s) and none joined; lost: " + lost);
  }
}

bool Coordinator::CanRollback(const Node& n) const {
  if (n.info.role != Role::kServer || !phase_.is(Phase::kTraining) ||
      opts_.config.output.checkpoint_every <= 0) {
    return false;
  }
  return std::any_of(nodes_.begin(), nodes_.end(), [&](const Node& o) {
    return o.info.role == Role::kServer && !o.lost && &o != &n;
  });
}

int Coordinator::RenumberServers(const server::ResumePoint& point) {
  // The live servers, renumbered in their old order; the keys cut anew over them.
  std::vector<Node*> live;
  for (auto& o : nodes_) {
    if (o.info.role == Role::kServer && !o.lost) live.push_back(&o);
  }
  std::sort(live.begin(), live.end(),
            [](const Node* a, const Node* b) { return a->info.id < b->info.id; });
  const int servers = static_cast<int>(live.size());
  // The job's options stay as launched: the map holds what changed (servers, replicas).
  int replicas = map_.config.cluster.replicas;
  if (servers % replicas != 0) replicas = 1;
  map_.config.cluster.replicas = replicas;
  map_.servers.clear();
  for (int s = 0; s < servers; ++s) {
    live[s]->info.id = s;
    map_.servers.push_back(live[s]->info);
  }
  const int distinct = servers / replicas;
  const std::vector<KeyRange> parts =
      PartitionKeys(opts_.param_count, std::vector<double>(distinct, 1.0), opts_.light_keys);
  map_.ranges.clear();
  for (int s = 0; s < servers; ++s) map_.ranges.push_back(parts[s % distinct]);
  ++map_.epoch;
  map_.resume_version = point.version;
  map_.start_steps = point.clocks;
  map_.schedules = schedules_.Encoded();
  map_.data_checksum = opts_.data_checksum;
  map_.resume_sources.assign(point.sources.begin(), point.sources.end());
  return servers;
}

void Coordinator::SendRollback(int64_t version) {
  Header h;
  h.type = MsgType::kCommand;
  h.sender_role = Role::kScheduler;
  h.step = version;
  for (const auto& o : nodes_) {
    if (o.lost || (o.info.role != Role::kServer && o.info.role != Role::kWorker)) continue;
    ClusterMap m = map_;
    m.your_id = o.info.id;
    if (o.info.role == Role::kWorker && members_.IsJoiner(o.info.id)) {
      m.own_slice = members_.OwnSliceOf(o.info.id);
    }
    h.topic = o.info.role == Role::kServer ? server::topics::kRollback : topics::kRollback;
    h.text = EncodeBody(m);
    SendMessage(socket_, h, {}, o.peer);
  }
}

void Coordinator::Rollback(Node& n, double silent_s) {
  const OutputConfig& output = opts_.config.output;
  const int lost_id = n.info.id;
  server::ResumePoint point;
  try {
    point = server::ChooseRollbackPoint(output.checkpoint_dir, opts_.param_count);
  } catch (const std::exception& e) {
    Fail(n.info.Name() + " has been silent for " + std::to_string(static_cast<int>(silent_s)) +
         " s and holds keys no other server has; no checkpoint to roll back to: " + e.what());
    return;
  }
  n.done = true;
  n.lost = true;
  // The steps after the checkpoint are abandoned: their checkpoints go (a later rollback must
  // not mix them with the new ranges').
  server::RemoveCheckpointsAfter(output.checkpoint_dir, point.version);
  const int64_t reached = book_.MaxStep();
  const int servers = RenumberServers(point);
  lost_servers_.clear();
  norm_parts_.clear();
  for (size_t w = 0; w < point.clocks.size(); ++w) book_.SetStep(w, point.clocks[w]);
  steps_done_ = 0;
  min_steps_done_ = INT64_MAX;
  for (auto& o : nodes_) {
    if (o.info.role == Role::kWorker && !o.lost) o.done = false;  // they train again
  }
  members_.Restart();
  steps_redone_ += reached - point.version;
  JsonObject event;
  event.Add("event", "rollback")
      .Add("server", lost_id)
      .Add("rank", n.info.mpi_rank)
      .Add("step", reached)
      .Add("to_version", point.version)
      .Add("silent_s", silent_s)
      .Add("wall_s", SecondsSince(start_))
      .Add("servers_left", servers)
      .Add("epoch", static_cast<int64_t>(map_.epoch));
  RecordMembership(event, n.info.Name() + " lost (silent " +
                              std::to_string(static_cast<int>(silent_s)) +
                              " s) and no other server holds its keys: the job rolls back from "
                              "step " +
                              std::to_string(reached) + " to the checkpoint of version " +
                              std::to_string(point.version) + " and goes on with " +
                              std::to_string(servers) + " server" + (servers > 1 ? "s" : ""));
  for (size_t s = 0; s < map_.servers.size(); ++s) {
    LOG(INFO) << map_.servers[s].Name() << " holds " << map_.ranges[s].ToString() << " (epoch "
              << map_.epoch << ")";
  }
  SendRollback(point.version);
  eval_->Remap(map_);
  NoteLostPeer();
}

void Coordinator::CheckSilence() {
  for (auto& n : nodes_) {
    if (n.done) continue;
    const double silent = SecondsSince(n.last_seen);
    if (silent > opts_.config.cluster.silence_s) {
      if (CanLose(n)) {
        if (n.info.role == Role::kServer) {
          DeclareServerLost(n, silent);
        } else {
          DeclareLost(n, silent);
        }
        continue;
      }
      if (CanRollback(n)) {
        Rollback(n, silent);
        if (phase_.is(Phase::kFailed)) return;
        continue;
      }
      Fail(n.info.Name() + " has been silent for " + std::to_string(static_cast<int>(silent)) +
           " s (no heartbeat; --heartbeat_s)");
      return;
    }
  }
}

int Coordinator::RegisterAll() {
  const int expected = opts_.num_servers + opts_.num_workers;
  while (static_cast<int>(nodes_.size()) < expected) {
    if (const int sig = InterruptSignal()) {
      Interrupt(sig);
      WriteSummary("", "");
      return 128 + sig;
    }
    if (SecondsSince(start_) > opts_.config.cluster.timeout_s) {
      int servers = 0, workers = 0;
      for (const auto& n : nodes_) (n.info.role == Role::kServer ? servers : workers)++;
      Fail("registration timed out after " + std::to_string(opts_.config.cluster.timeout_s) +
           " s: " + std::to_string(servers) + " of " + std::to_string(opts_.num_servers) +
           " servers and " + std::to_string(workers) + " of " + std::to_string(opts_.num_workers) +
           " workers registered");
      WriteSummary("", failure_);
      return 1;
    }
    Message m;
    std::string peer;
    try {
      if (!ReceiveMessage(socket_, true, 50, &m, &peer)) continue;
      if (m.header.type != MsgType::kRegister) continue;
      std::string error;
      bool fatal = false;
      if (!Register(m, &error, &fatal)) {
        LOG(ERROR) << "registration refused: " << error;
        Header h;
        h.type = MsgType::kShutdown;
        h.text = error;
        SendMessage(socket_, h, {}, m.peer);
        if (fatal) {
          Fail("registration refused: " + error);
          WriteSummary("", failure_);
          return 1;
        }
      }
    } catch (const CodecError& e) {
      LOG(ERROR) << "malformed registration ignored: " << e.what();
    }
  }
  return -1;
}

void Coordinator::OnEvaluation(const EvalOutcome& r) {
  if (r.json != "null") {  // "null": no evaluation trips
    JsonObject line;
    line.Add("type", "eval").Add("step", r.step).Add("version", r.version);
    line.Add("wall_s", SecondsSince(start_)).Add("train_s", r.train_s).AddRaw("eval", r.json);
    out_->AppendMetrics(line);
    LOG(INFO) << "eval at step " << r.step << " (version " << r.version << "): " << r.json;
    progress_line_.set_eval_mape(r.mape);
  }
  if (!r.final && r.json != "null" && phase_.is(Phase::kTraining) && early_stop_.empty() &&
      patience_.Offer(r.mape)) {
    // Early stopping: every worker stops after the same step, as with the time budget.
    early_stop_ = JsonObject()
                      .Add("evaluation_step", r.step)
                      .Add("patience", opts_.config.train.patience)
                      .Add("best_mape", patience_.best())
                      .str();
    const std::string text = "no lower MAPE in " + std::to_string(opts_.config.train.patience) +
                             " evaluations (--patience; best " + JsonNumber(patience_.best()) +
                             "): training stops";
    LOG(WARNING) << text;
    std::fprintf(stderr, "[tteps] %s\n", text.c_str());
    if (!stop_sent_) {
      stop_sent_ = true;
      Command(Role::kWorker, topics::kStop);
    }
  }
  if (r.best) {
    best_eval_ = JsonObject()
                     .Add("step", r.step)
                     .Add("version", r.version)
                     .Add("train_s", r.train_s)
                     .AddMembers(r.json)
                     .str();
  }
  if (r.final) {
    final_eval_ = r.json;
    // Servers may go: they answer with their statistics. Workers, done, wait for this word (a
    // scheduler lost before it is a failure they name).
    Header h;
    h.type = MsgType::kShutdown;
    h.sender_role = Role::kScheduler;
    for (auto& n : nodes_) {
      if (!n.lost) SendMessage(socket_, h, {}, n.peer);
      if (n.info.role == Role::kServer) n.done = true;
    }
    server_stats_deadline_ =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(opts_.config.cluster.timeout_s));
  }
}

void Coordinator::ReceiveFor20Ms() {
  Message m;
  std::string peer;
  try {
    // Bounded, so that a flood of messages cannot starve the checks after it.
    for (int i = 0; i < 1000 && ReceiveMessage(socket_, true, 20, &m, &peer); ++i) {
      HandleMessage(m);
    }
  } catch (const CodecError& e) {
    ++refused_;
    LOG_IF(ERROR, LogThisRefusal(refused_))
        << "malformed message ignored: " << e.what() << " (" << refused_ << " refused so far)";
  }
}

void Coordinator::AdvancePhase() {
  const bool workers_done = std::all_of(nodes_.begin(), nodes_.end(), [](const Node& n) {
    return n.info.role != Role::kWorker || n.done;
  });
  if (workers_done && phase_.is(Phase::kTraining)) {
    phase_.MoveTo(Phase::kDraining);
    train_end_ = Clock::now();
    progress_line_.Update(book_.MaxEpoch(), steps_done_, last_loss_, last_trips_per_s_,
                          /*force=*/true);
    FinishPolicy();
    if (UsesServers(mode_)) {
      eval_->Request(steps_done_, true, TrainSeconds());
    } else if (!final_offered_) {
      // Worker 0 sends its final snapshot before it reports done, on the same socket.
      Fail("worker 0 finished without sending its final parameters (see its log)");
    }
  }
  if (!final_eval_.empty() && phase_.is(Phase::kDraining) &&
      (static_cast<int>(server_stats_.size() + lost_servers_.size()) == Servers() ||
       Clock::now() > server_stats_deadline_)) {
    phase_.MoveTo(Phase::kDone);
  }
}

int Coordinator::Run() {
  start_ = Clock::now();
  // 1. Registration.
  if (const int code = RegisterAll(); code >= 0) return code;
  SendMaps();
  WarnIfOpen();
  phase_.MoveTo(Phase::kReady);
  eval_->Start(map_);
  train_start_ = Clock::now();

  // 2. Training, then draining: until every worker is done and the final evaluation and the
  // servers' statistics are in, or a failure.
  while (!phase_.is(Phase::kFailed) && !phase_.is(Phase::kDone)) {
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
    if (phase_.is(Phase::kFailed)) break;
    SendDecisions();
    MaybeEvaluate();
    MaybeStopForBudget();
    CheckSilence();
    CheckMinWorkers();
    AdvancePhase();
  }
  FinishPolicy();  // a failed job: stop the agent too
  WriteSummary(final_eval_, failure_);
  if (interrupted_ != 0) return 128 + interrupted_;
  if (phase_.is(Phase::kFailed)) return 1;
  std::printf("%s\n", JsonObject()
                          .AddRaw("final_eval", final_eval_)
                          .Add("mode", ModeName(mode_))
                          .Add("out_dir", out_->dir())
                          .str()
                          .c_str());
  return 0;
}

void Coordinator::AddWork(JsonObject& s) const {
  // A job that ended before training began trained for no time (not since the clock's epoch:
  // a registration timeout used to report the machine's uptime).
  const double train_s =
      train_start_ == Clock::time_point{}
          ? 0.0
          : std::chrono::duration<double>(
                (train_end_ != Clock::time_point{} ? train_end_ : Clock::now()) - train_start_)
                .count();
  const WorkerProgress sums = book_.Sums();
  const int64_t trips = sums.trips, epochs = book_.empty() ? 0 : sums.epoch + 1;
  const int64_t steps_timed = sums.steps_timed;
  const double compute = sums.compute_s, push = sums.push_s, pull = sums.pull_s;
  const double wait = sums.wait_s, allreduce = sums.allreduce_s;
  const double push_bytes = sums.push_bytes, pull_bytes = sums.pull_bytes;
  const double per = steps_timed > 0 ? 1.0 / steps_timed : 0;
  s.Add("workers", opts_.num_workers)
      .Add("servers", Servers())
      .Add("epochs", epochs)
      .Add("steps", phase_.is(Phase::kFailed) ? MinStep()
                    : steps_done_ > 0         ? steps_done_
                                              : opts_.total_steps)
      .Add("planned_steps", opts_.total_steps)
      .Add("steps_redone", steps_redone_)
      .Add("stopped_by_time_budget", stop_sent_ && min_steps_done_ < opts_.total_steps)
      .Add("batch_size", opts_.config.train.batch_size)
      .Add("trips", trips)
      .Add("trips_per_s", train_s > 0 ? trips / train_s : 0.0)
      .Add("train_seconds", train_s)
      .Add("wall_seconds", SecondsSince(start_))
      .Add("startup_s", startup_s_)
      .Add("parameters", opts_.param_count)
      .Add("step_time_s", !UsesServers(mode_) ? JsonObject()
                                                    .Add("compute", compute * per)
                                                    .Add("allreduce", allreduce * per)
                                                    .Add("wait", wait * per)
                                              : JsonObject()
                                                    .Add("compute", compute * per)
                                                    .Add("push", push * per)
                                                    .Add("pull", pull * per)
                                                    .Add("wait", wait * per));
  // Payload bytes one worker sent in pushes and received in pull replies per step, the mean over
  // workers and steps (headers not counted; the dense model is parameters x 4 bytes).
  if (UsesServers(mode_)) {
    s.Add("bytes_per_step",
          JsonObject().Add("push", push_bytes * per).Add("pull", pull_bytes * per));
  }
}

void Coordinator::AddServersAndRefusals(JsonObject& s) const {
  // Every server sees every push, so one server's staleness histogram describes the job (the
  // lowest that reported: server 0 unless it was lost).
  if (!server_stats_.empty()) s.Add("server_stats", server_stats_.begin()->second.ToJson());
  // Each server's state hash at the end: replicas of a range (--replicas) hold the same.
  JsonObject hashes;
  for (const auto& [id, stats] : server_stats_) {
    hashes.Add(std::to_string(id), server::HexHash(stats.state_hash));
  }
  if (!server_stats_.empty()) s.Add("server_state_hashes", hashes);
  // What was refused, summed over the servers and the scheduler (each refusal is also in that
  // process's log): messages (malformed, mismatched or poisoned; non_finite of those) and
  // connections with an unknown CURVE key.
  int64_t errors = refused_, non_finite = 0;
  int64_t unauthenticated = opts_.curve ? opts_.curve->refused() : 0;
  for (const auto& [id, stats] : server_stats_) {
    errors += stats.errors;
    non_finite += stats.non_finite;
    unauthenticated += stats.unauthenticated;
  }
  s.Add("refused", JsonObject()
                       .Add("messages", errors)
                       .Add("non_finite", non_finite)
                       .Add("unauthenticated", unauthenticated));
  s.Add("curve", opts_.curve != nullptr);
}

void Coordinator::WriteSummary(const std::string& final_eval, const std::string& error) {
  JsonObject s;
  s.Add("mode", ModeName(mode_))
      .Add("status", interrupted_ != 0 ? "interrupted"
                     : error.empty()   ? "done"
                                       : "failed");
  if (interrupted_ != 0) s.Add("signal", SignalName(interrupted_));
  s.Add("bad_records_skipped", opts_.bad_records_skipped);
  // Where a resumed job starts from (--resume), when the servers write checkpoints.
  if (UsesServers(mode_) && opts_.config.output.checkpoint_every > 0) {
    s.Add("checkpoint_dir", opts_.config.output.checkpoint_dir);
  }
  AddWork(s);
  // Private memory (RssAnon) and shared pages (mapped files: a trip store's shards) apart.
  const MemoryPeaks mem = PeakMemory();
  s.Add("peak_rss_mb", PeakMemoryJson(&WorkerProgress::peak_rss_mb,
                                      &server::ServerStats::peak_rss_mb, PeakRssMb()));
  s.Add("peak_private_mb", PeakMemoryJson(&WorkerProgress::peak_private_mb,
                                          &server::ServerStats::peak_private_mb, mem.private_mb));
  s.Add("peak_shared_mb", PeakMemoryJson(&WorkerProgress::peak_shared_mb,
                                         &server::ServerStats::peak_shared_mb, mem.shared_mb));
  AddServersAndRefusals(s);
  s.Add("accumulation_policy", opts_.config.policy.name);
  if (policy_) s.Add("accumulation_decisions", decisions_);
  if (!policy_error_.empty()) s.Add("policy_error", policy_error_);
  if (!final_eval.empty()) s.AddRaw("final_eval", final_eval);
  if (final_eval == "null")
    s.Add("evaluation", "none: no evaluation trips (--eval_fraction 0, or an empty --eval_data)");
  if (!best_eval_.empty()) s.AddRaw("best_eval", best_eval_);
  if (!early_stop_.empty()) s.AddRaw("early_stop", early_stop_);
  // Every worker and server lost while the job went on, in order.
  std::string membership = "[";
  for (size_t i = 0; i < membership_.size(); ++i) membership += (i ? "," : "") + membership_[i];
  s.AddRaw("membership", membership + "]");
  if (!error.empty()) s.Add("error", error);
  if (!final_eval_.empty()) {
    s.Add("model", out_->Path("model.pt")).Add("model_last", out_->Path("model_last.pt"));
  }
  out_->WriteSummary(s);
}

}  // namespace tteps::scheduler
