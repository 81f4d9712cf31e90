#include "worker/exchange/make_exchange.h"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

#include "worker/exchange/exchanges.h"

namespace tteps {
namespace {

void Require(bool ok, Mode mode, const char* what) {
  if (!ok) throw std::runtime_error(std::string("--mode ") + ModeName(mode) + " needs " + what);
}

std::unique_ptr<Exchange> MakePs(Mode mode, deeptte::DeepTTEImpl& model, const ExchangeContext& c) {
  Require(c.map && c.control && c.zmq && c.membership, mode,
          "a scheduler and servers (launch/tteps)");
  ControlChannel* control = c.control;
  MembershipLink* membership = c.membership;
  KVClientOptions kv;
  kv.timeout_s = c.config.cluster.timeout_s;
  kv.abort = [control, membership] {
    return control->ShutdownRequested() || membership->RollbackPending();
  };
  // Sync: a lost worker's slice given to this worker, which the pull may wait for, or a pause
  // (--min_workers); SSP: a pause, while a pull waits for a slower worker. The wait ends
  // (ExchangeResult::view_changed).
  if (mode == Mode::kSync || mode == Mode::kSsp) {
    kv.interrupt = [membership] { return membership->ViewChanged(); };
  }
  kv.lost_servers = &membership->lost_servers();
  kv.busy_seen = [control](int worker) { return control->ComputingSeen(worker); };
  if (c.config.exchange.wire_dtype == "bf16") kv.wire = WireType::kBf16;
  // A worker that joined pushes a lost worker's slice: whole, as an adopter does (the servers
  // take another worker's slice only whole).
  const bool joined = c.map->own_slice >= 0;
  PsExchangeOptions o;
  o.worker = c.map->your_id;
  o.own_slice = c.map->own_slice;
  o.wait_for_version = mode != Mode::kAsync;
  o.send_norm = c.config.optimizer.clip_norm > 0;
  o.sparse_rows = c.config.exchange.sparse_rows;
  // Parts of a push only make sense where one step sums every worker's push (sync).
  o.push_bucket_mb = mode == Mode::kSync && !joined ? c.config.exchange.push_bucket_mb : 0;
  // So does a pull by stages: one step's weights are all of one version only in sync mode.
  o.pull_overlap = mode == Mode::kSync && c.config.exchange.pull_overlap;
  o.tracer = c.tracer;
  o.last_step_waits = mode == Mode::kSync;
  return MakePsExchange(model, std::make_unique<KVClient>(*c.zmq, *c.map, control->self(), kv), o);
}

std::unique_ptr<WorkerGroup> MakeGroup(Mode mode, deeptte::DeepTTEImpl& model,
                                       const ExchangeContext& c) {
  Require(c.map && c.control && c.workers_comm != MPI_COMM_NULL, mode, "mpirun (launch/tteps)");
  int rank = -1;
  MPI_Comm_rank(c.workers_comm, &rank);
  if (rank != c.map->your_id) {
    throw std::logic_error("worker id " + std::to_string(c.map->your_id) + " is rank " +
                           std::to_string(rank) + " of the workers' communicator");
  }
  WorkerGroupOptions o;
  o.worker = c.map->your_id;
  o.num_workers = static_cast<int>(c.map->workers.size());
  o.timeout_s = c.config.cluster.timeout_s;
  o.check_every = c.config.exchange.check_every;
  for (const auto& w : c.map->workers) o.worker_names.push_back(w.Name());
  o.tracer = c.tracer;
  ControlChannel* control = c.control;
  o.busy_seen = [control](int worker) { return control->ComputingSeen(worker); };
  const auto shutdown = [control] { return control->ShutdownRequested(); };
  const ExchangeConfig& x = c.config.exchange;
  if (mode != Mode::kRing || x.allreduce != "ring" || x.ring_transport != "tcp") {
    return std::make_unique<WorkerGroup>(
        model, collectives::MakeAllreduce(x.allreduce, c.workers_comm), o, shutdown);
  }
  // Our ring over TCP: a lost worker's neighbours reconnect around it.
  Require(c.tcp_ring && c.membership, mode, "a ring socket");
  const ClusterMap* map = c.map;
  collectives::TcpRing* tcp = c.tcp_ring;
  const int self = map->your_id;
  auto built = std::make_shared<size_t>(0);  // losses the current ring leaves out
  MembershipLink* membership = c.membership;
  o.membership_changed = [built, membership] { return membership->lost_worker_count() != *built; };
  o.rebuild = [built, membership, map, tcp, self] {
    const std::vector<int> lost = membership->LostWorkers();
    collectives::RingMembers members;
    members.generation = static_cast<uint32_t>(lost.size());
    for (const NodeInfo& w : map->workers) {
      if (std::find(lost.begin(), lost.end(), w.id) != lost.end()) continue;
      if (w.endpoint.empty()) throw std::runtime_error(w.Name() + " has no ring endpoint");
      members.ids.push_back(w.id);
      members.endpoints.push_back(w.endpoint);
    }
    *built = lost.size();
    RingView ring;
    ring.allreduce = collectives::MakeRingAllreduce(tcp->Links(members, self));
    ring.ids = members.ids;
    return ring;
  };
  RingView first = o.rebuild();
  if (first.ids.size() != map->workers.size()) {
    throw std::runtime_error("a worker was lost before the ring was built");
  }
  return std::make_unique<WorkerGroup>(model, std::move(first.allreduce), o, shutdown);
}

}  // namespace

std::unique_ptr<Exchange> MakeExchange(deeptte::DeepTTEImpl& model, const ExchangeContext& c) {
  const Mode mode = c.config.exchange.mode;
  const OptimizerConfig& opt = c.config.optimizer;
  switch (mode) {
    case Mode::kLocal:
      return MakeLocalExchange(model, opt, c.tracer, MakeAdaScale(opt, c.config.train.batch_size));
    case Mode::kSync:
    case Mode::kAsync:
    case Mode::kSsp:
      return MakePs(mode, model, c);
    case Mode::kRing:
      return MakeRingExchange(model, opt, MakeGroup(mode, model, c), c.config.exchange.bucket_mb,
                              c.tracer, MakeAdaScale(opt, c.config.train.batch_size));
    case Mode::kAverage:
      return MakeAverageExchange(model, opt, MakeGroup(mode, model, c),
                                 c.config.exchange.average_every, c.tracer);
  }
  throw std::logic_error("unknown mode");
}

}  // namespace tteps
