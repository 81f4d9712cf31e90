// tteps-scheduler: coordinates a job (rank 0 of the mpirun), with or without servers. It holds the
// job's configuration (all training flags are given to it and sent to every node), registers
// servers and workers, watches heartbeats, gathers metrics, evaluates and writes the outputs.
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <zmq.hpp>

#include "common/bootstrap.h"
#include "common/checkpoint_files.h"
#include "common/count_text.h"
#include "common/curve.h"
#include "common/init.h"
#include "common/interrupt.h"
#include "common/job_flags.h"
#include "common/node_flags.h"
#include "common/run_output.h"
#include "common/transport.h"
#include "model/data/norm_stats.h"
#include "model/dataset.h"
#include "model/deeptte/embedding_rows.h"
#include "model/device.h"
#include "model/model_params.h"
#include "model/row_spans.h"
#include "scheduler/coordinator.h"
#include "scheduler/job_mode.h"
#include "scheduler/make_policy.h"
#include "scheduler/metrics_endpoint.h"
#include "scheduler/model_evaluation.h"
#include "scheduler/policy_flags.h"

DEFINE_string(mode, "sync",
              "sync (BSP), async (ASP) or ssp (--staleness) through parameter servers; ring "
              "(gradient allreduce) or average (parameter averaging) between workers only");
DEFINE_string(out_dir, "out", "output directory: metrics.jsonl, summary.json, model.pt");
DEFINE_int32(num_servers, 0, "started without MPI: how many servers will register");
DEFINE_int32(num_workers, 0, "started without MPI: how many workers will register");
DEFINE_double(silence_s, 0, "a node silent this long fails the job (0: 5 x --heartbeat_s)");
DEFINE_double(step_timeout_s, 1800,
              "a worker computing one step for longer fails the job (0: never); waits on a "
              "computing worker are not bounded by --timeout_s");
DEFINE_int32(replicas, 1,
             "PS modes: servers holding each key range (--servers must be a multiple); with 2, "
             "a lost server is replaced by its replica and the job goes on");
DEFINE_int32(
    min_workers, 0,
    "sync, async, ssp: with fewer live workers than this (lost ones, not replaced by a worker that "
    "joined with tteps-worker --scheduler ADDRESS) training pauses; a pause longer than "
    "--timeout_s fails the job; 0: off");
DEFINE_int32(metrics_port, 0,
             "serve the running job's metrics for Prometheus at http://HOST:PORT/metrics (0: "
             "off); HOST is loopback unless --bind_interface names another interface");
DEFINE_int32(worker_series, 64,
             "jobs of up to this many workers write a train line to metrics.jsonl, TensorBoard "
             "series and Prometheus gauges per worker; larger jobs write how the workers spread "
             "(type train_workers: min, median and max of loss and speed) each time every live "
             "worker has reported a newer window");
DEFINE_bool(check, false,
            "only check the configuration (flags, data and stats files) and exit: launch/tteps "
            "runs this before mpirun, so a mistake fails at once instead of at the deadline");

namespace tteps::scheduler {
namespace {

// The job's configuration from this program's flags, validated.
JobConfig ConfigFromFlags() {
  JobConfig c = JobConfigFromFlags();
  c.exchange.mode = ParseMode(FLAGS_mode);
  JobMode{c.exchange};  // throws for a mode that runs without a scheduler
  c.policy = PolicyConfigFromFlags();
  c.output.out_dir = FLAGS_out_dir;
  if (c.output.checkpoint_dir.empty() && UsesServers(c.exchange.mode)) {
    c.output.checkpoint_dir = FLAGS_out_dir + "/checkpoints";
  }
  c.cluster.timeout_s = FLAGS_timeout_s;
  c.cluster.heartbeat_s = FLAGS_heartbeat_s;
  c.cluster.silence_s = FLAGS_silence_s > 0 ? FLAGS_silence_s : 5 * FLAGS_heartbeat_s;
  c.cluster.replicas = FLAGS_replicas;
  c.cluster.min_workers = FLAGS_min_workers;
  if (c.policy.name == "ppo") CheckPpo(c.policy);  // the agent's own settings first
  c.Validate();
  return c;
}

// Beside the checkpoints: the configuration of the job that wrote them, which a resumed job is
// compared with (ResumeMismatches) before any process waits, and the normalisation statistics
// its weights were trained with.
constexpr const char* kCheckpointJobFile = "job.json";
constexpr const char* kCheckpointStatsFile = "stats.json";

// config.json in the out_dir and, beside the checkpoints, what a resume is checked against.
void WriteJobFiles(const JobConfig& c, const data::NormStats& stats, const RunOutput& out) {
  WriteFileAtomically(out.Path("config.json"), c.ToJson());
  if (!UsesServers(c.exchange.mode) || c.output.checkpoint_every <= 0) return;
  std::filesystem::create_directories(c.output.checkpoint_dir);
  WriteFileAtomically(c.output.checkpoint_dir + "/" + kCheckpointJobFile, c.ToJson());
  data::SaveNormStats(stats, c.output.checkpoint_dir + "/" + kCheckpointStatsFile);
}

// Weights trained on inputs normalised one way go on only with the same normalisation (other
// data, or more of it, would change the statistics of the default rule).
void CheckResumedStats(const JobConfig& c, const Dataset& dataset) {
  if (c.output.resume.empty()) return;
  const std::string path = c.output.resume + "/" + kCheckpointStatsFile;
  if (!std::filesystem::exists(path)) return;  // checkpoints of an older tteps
  const data::NormStats then = data::LoadNormStats(path);
  if (std::memcmp(&then, &dataset.stats, sizeof then) == 0) return;
  std::string far;
  for (const std::string& f : data::FarStatistics(then, dataset.stats, 0)) far += "; " + f;
  throw std::invalid_argument("cannot resume from " + c.output.resume +
                              ": its weights were trained with other normalisation statistics "
                              "than this job's (" +
                              dataset.stats_source + far + "): resume with --stats " + path +
                              " to keep them");
}

// Throws std::invalid_argument listing every flag that differs from the checkpoint's job.
void CheckResumable(const JobConfig& c) {
  if (c.output.resume.empty()) return;
  const std::string path = c.output.resume + "/" + kCheckpointJobFile;
  std::ifstream in(path);
  if (!in) return;  // checkpoints of an older tteps: the restore itself checks what it can
  std::ostringstream text;
  text << in.rdbuf();
  JobConfig then;
  try {
    then = JobConfig::FromJson(text.str());
  } catch (const std::exception& e) {
    LOG(WARNING) << path
                 << " is unreadable, so the resumed job is not compared with it: " << e.what();
    return;
  }
  const std::vector<std::string> diff = ResumeMismatches(then, c);
  if (diff.empty()) return;
  std::string list;
  for (const std::string& d : diff) list += (list.empty() ? "" : ", ") + d;
  throw std::invalid_argument(
      "cannot resume from " + c.output.resume +
      ": this job differs from the one that wrote the checkpoints: " + list);
}

// Opens the input files, without starting anything (reading every trip is the job's work).
void CheckFiles(const JobConfig& c) {
  std::vector<std::string> files = c.data.train_files;
  if (!c.data.eval_file.empty()) files.push_back(c.data.eval_file);
  if (!c.data.stats.empty()) files.push_back(c.data.stats);
  for (const auto& f : files) {
    if (!std::ifstream(f)) throw std::invalid_argument("cannot open " + f);
  }
  if (!c.output.resume.empty() && !std::ifstream(c.output.resume)) {
    throw std::invalid_argument("cannot open the checkpoint directory " + c.output.resume);
  }
  CheckResumable(c);
  if (!c.output.trace.empty() && !std::ofstream(c.output.trace)) {
    throw std::invalid_argument("cannot write the trace file " + c.output.trace + " (--trace)");
  }
}

// A job that failed before the coordinator ran: summary.json says why.
// Not where another job runs or one finished (OutDirLock): the refusal itself may be the error.
// The summary of a job that ended before it started: `fields` say how.
void WriteEarlySummary(const JobConfig& config, const JsonObject& fields) {
  try {
    const std::string& dir = config.output.out_dir;
    OutDirLock own(dir);
    WriteFileAtomically(
        dir + "/summary.json",
        JsonObject().Add("mode", ModeName(config.exchange.mode)).AddMembers(fields.str()).str() +
            "\n");
  } catch (const std::exception& e) {
    LOG(ERROR) << "no summary.json: " << e.what();
  }
}

void WriteFailure(const JobConfig& config, const std::string& error) {
  WriteEarlySummary(config, JsonObject().Add("status", "failed").Add("error", error));
}

// The job's shape from the launch (MPI's ranks, else the flags), checked against the mode.
void SetShape(const Bootstrap& boot, const JobConfig& config, CoordinatorOptions* o) {
  const Mode mode = config.exchange.mode;
  o->num_servers = boot.mpi ? boot.num_servers : FLAGS_num_servers;
  o->num_workers = boot.mpi ? boot.num_workers : FLAGS_num_workers;
  if (!UsesServers(mode) && (o->num_servers != 0 || o->num_workers < 1 || !boot.mpi)) {
    throw std::invalid_argument(std::string("--mode ") + ModeName(mode) +
                                " runs one or more workers and no servers, under mpirun (found " +
                                CountOf(o->num_servers, "server") + " and " +
                                CountOf(o->num_workers, "worker") + ")");
  }
  if (UsesServers(mode) && (o->num_servers < 1 || o->num_workers < 1)) {
    throw std::invalid_argument("the job needs at least one server and one worker (found " +
                                std::to_string(o->num_servers) + " and " +
                                std::to_string(o->num_workers) + ")");
  }
  if (UsesServers(mode) && o->num_servers % config.cluster.replicas != 0) {
    throw std::invalid_argument("--replicas " + std::to_string(config.cluster.replicas) +
                                " needs a multiple of that many servers, not " +
                                std::to_string(o->num_servers));
  }
}

// --slices: 0 becomes one per worker; more slices than workers (sync mode) are computed by the
// workers as adopted ones from the start.
void ResolveSlices(CoordinatorOptions* o) {
  ExchangeConfig& x = o->config.exchange;
  if (x.slices == 0) x.slices = o->num_workers;
  if (x.slices < o->num_workers) {
    throw std::invalid_argument("--slices " + std::to_string(x.slices) + " is fewer than the " +
                                std::to_string(o->num_workers) +
                                " workers: every worker computes at least one slice");
  }
  if (x.slices == o->num_workers) return;
  if (!JobMode(x).lockstep()) {
    throw std::invalid_argument("--slices " + std::to_string(x.slices) + " with " +
                                std::to_string(o->num_workers) +
                                " workers needs --mode sync (or local); " + ModeName(x.mode) +
                                " takes one slice per worker");
  }
}

// --resume: the checkpoint's version, ranges and clocks, and the slices' schedules kept.
void SetResumePoint(const JobConfig& config, CoordinatorOptions* o) {
  CheckResumable(config);
  const auto point = ChooseResumePoint(config.output.resume, o->num_servers, o->param_count,
                                       config.cluster.replicas);
  const int slices = static_cast<int>(config.exchange.slices);
  if (static_cast<int>(point.clocks.size()) != slices) {
    throw std::invalid_argument("the checkpoint in " + config.output.resume + " is of a job with " +
                                std::to_string(point.clocks.size()) + " slices (one per worker " +
                                "unless --slices), not " + std::to_string(slices));
  }
  o->resume_version = point.version;
  o->start_steps = point.clocks;
  o->resume_ranges = point.ranges;
  // An accumulation policy's changes: every slice's stream starts again where it stood.
  const std::string kept = config.output.resume + "/" + kSchedulesFile;
  if (std::ifstream in{kept}) {
    std::ostringstream text;
    text << in.rdbuf();
    o->schedules = ParseSchedules(text.str(), kept);
    for (const auto& [slice, schedule] : o->schedules) {
      if (slice >= slices) {
        throw std::invalid_argument(kept + " has a schedule of slice " + std::to_string(slice) +
                                    ", and the job has " + std::to_string(slices) + " slices");
      }
    }
  }
  LOG(INFO) << "resuming from " << config.output.resume << " at version " << point.version
            << (o->schedules.empty() ? "" : " with the slices' accumulation schedules of " + kept);
}

// Binds the scheduler's socket and tells every rank where it is; returns the endpoint.
std::string BindAndShare(Bootstrap& boot, zmq::socket_t& socket, int64_t param_count) {
  // Nothing larger than worker 0's snapshot of the model (or a header) may arrive.
  socket.set(
      zmq::sockopt::maxmsgsize,
      static_cast<int64_t>(std::max<size_t>(param_count * sizeof(float), kMaxHeaderBytes)) + 65536);
  std::string endpoint;
  if (boot.mpi) {
    endpoint = BindTcp(socket, boot.bind_host, boot.advertise_host);
  } else {
    const std::string& given = boot.scheduler_endpoint;  // --scheduler tcp://HOST:PORT
    BindTcp(socket, boot.bind_host, "", std::stoi(given.substr(given.rfind(':') + 1)));
    endpoint = given;
  }
  ShareSchedulerEndpoint(&boot, endpoint);
  LOG(INFO) << "scheduler at " << endpoint;
  return endpoint;
}

// The console's header; every process's full log is in out_dir/logs. The out_dir has a line of
// its own: a long path does not make a long line of the rest.
void PrintHeader(const CoordinatorOptions& o, const Dataset& dataset, const std::string& out_dir) {
  std::string skipped;
  if (dataset.skipped > 0) skipped = ", " + CountOf(dataset.skipped, "bad record") + " skipped";
  std::fprintf(stderr,
               "[tteps] %s: %s, %s; %zu training and %zu eval trips (split %s%s); %s\n"
               "[tteps] out_dir %s\n",
               ModeName(o.config.exchange.mode), CountOf(o.num_workers, "worker").c_str(),
               CountOf(o.num_servers, "server").c_str(), dataset.train->size(),
               dataset.eval->size(), dataset.split.c_str(), skipped.c_str(),
               CountOf(o.total_steps, "step").c_str(), out_dir.c_str());
  for (const std::string& w : dataset.warnings) {
    std::fprintf(stderr, "[tteps] warning: %s\n", w.c_str());
  }
}

// Runs the coordinator (with --trace's timeline) to the job's end; returns its exit code.
int Coordinate(zmq::socket_t& socket, const CoordinatorOptions& o, Evaluation* eval, RunOutput* out,
               AccumulationPolicy* policy, MetricsEndpoint* metrics) {
  Coordinator coordinator(socket, o, eval, out, policy);
  if (metrics) coordinator.set_metrics([metrics](std::string text) { metrics->Publish(text); });
  std::unique_ptr<TraceFile> trace;
  const std::string& trace_path = o.config.output.trace;
  if (!trace_path.empty()) {
    trace = std::make_unique<TraceFile>(trace_path);
    coordinator.set_trace(trace.get());
  }
  const int rc = coordinator.Run();
  if (trace) {
    trace->Close();
    LOG(INFO) << "timeline written to " << trace_path;
  }
  return rc;
}

// The model's layout and the planned steps; a cosine schedule spans those steps unless told
// otherwise (every node gets the number).
void SetModelAndSteps(const ParamLayout& layout, size_t train_trips, CoordinatorOptions* o) {
  o->param_count = layout.total();
  o->fingerprint = layout.fingerprint();
  if (UsesServers(o->config.exchange.mode) && o->config.exchange.sparse_rows) {
    o->light_keys = RowSpans(layout, deeptte::EmbeddingTables()).TableKeys();
  }
  o->total_steps = TotalSteps(o->config.train, train_trips);
  if (o->config.optimizer.lr_steps == 0) o->config.optimizer.lr_steps = o->total_steps;
}

// --metrics_port: the endpoint, on loopback unless --bind_interface names an interface (null
// when off).
std::unique_ptr<MetricsEndpoint> ServeMetrics(const Bootstrap& boot, const NodeOptions& node) {
  if (FLAGS_metrics_port <= 0) return nullptr;
  auto endpoint = std::make_unique<MetricsEndpoint>(
      node.bind_interface.empty() ? "127.0.0.1" : boot.bind_host, FLAGS_metrics_port);
  LOG(INFO) << "metrics for Prometheus at http://" << endpoint->address() << "/metrics";
  return endpoint;
}

// A signal before the job started: its summary says so; returns the exit code.
int EndBeforeStart(const JobConfig& config, int sig) {
  LOG(WARNING) << "the job was interrupted (" << SignalName(sig) << ") before it started";
  WriteEarlySummary(config, JsonObject()
                                .Add("status", "interrupted")
                                .Add("signal", SignalName(sig))
                                .Add("steps", int64_t{0}));
  return 128 + sig;
}

int Schedule(Bootstrap& boot, const NodeOptions& node, const JobConfig& config) {
  CatchInterrupts();  // from here on a SIGTERM or SIGINT ends the job with its summary
  auto dataset = LoadDataset(config.data, config.model.kernel_size);
  LOG(INFO) << "data: " << dataset.description;
  const size_t train_trips = dataset.train->size();
  CheckBatchFits(config.train, train_trips);
  torch::manual_seed(config.train.seed);
  deeptte::DeepTTE model(config.model, dataset.stats);
  const ParamLayout layout = LayoutOf(*model);
  LOG(INFO) << "parameters: " << layout.Describe();
  model->to(ResolveDevice(config.train.device, LocalRank()));  // the evaluation's device

  // Before the job starts, so that an unreadable --ppo_policy_in stops it at once.
  // One decision per slice (--slices: one per worker unless more).
  const int workers = boot.mpi ? boot.num_workers : FLAGS_num_workers;
  auto policy = MakePolicy(config.policy, StepModelOf(config.optimizer),
                           std::max<int>(workers, static_cast<int>(config.exchange.slices)),
                           config.exchange.accumulation);

  CoordinatorOptions o;
  o.config = config;
  o.data_path = config.data.train_files.front();
  o.step_timeout_s = FLAGS_step_timeout_s;
  o.worker_series = FLAGS_worker_series;
  o.data_checksum = dataset.store_checksum;
  o.bad_records_skipped = dataset.skipped;
  o.data_facts = dataset.Facts();
  SetShape(boot, config, &o);
  ResolveSlices(&o);
  SetModelAndSteps(layout, train_trips, &o);
  if (!config.output.resume.empty()) SetResumePoint(o.config, &o);
  CheckResumedStats(config, dataset);
  // Interrupted while the data loaded: the job ends before its address is shared, so that every
  // other process stops at once (EndNode) instead of at its registration deadline.
  if (const int sig = InterruptSignal()) return EndBeforeStart(config, sig);

  // Everything that can refuse the job is above: until the endpoint is shared below, a failure
  // ends every other process at once (EndNode) instead of at the registration deadline.
  RunOutput out(config.output.out_dir);
  WriteJobFiles(o.config, dataset.stats, out);

  zmq::context_t ctx;
  const auto curve = SecureContext(ctx, node.curve_dir);
  auto socket = MakeSocket(ctx, zmq::socket_type::router);
  const auto metrics = ServeMetrics(boot, node);  // a busy port fails the job before it starts
  BindAndShare(boot, socket, layout.total());
  o.curve = curve.get();
  PrintHeader(o, dataset, out.dir());
  auto eval = MakeModelEvaluation(ctx, model, dataset.eval, config.train.eval_batch_size,
                                  config.cluster.timeout_s, out.Path("model.pt"),
                                  out.Path("model_last.pt"), config.output.keep_best);
  const int rc = Coordinate(socket, o, eval.get(), &out, policy.get(), metrics.get());
  eval.reset();
  // The final words (the workers' shutdown) are still queued: give them a moment to leave
  // instead of dropping them with the socket (linger 0 otherwise).
  socket.set(zmq::sockopt::linger, 2000);
  return rc;
}

}  // namespace
}  // namespace tteps::scheduler

int main(int argc, char** argv) {
  tteps::InitProgram(&argc, &argv,
                     "tteps-scheduler: coordinates a tteps job (MPI rank 0).\n"
                     "  launch/tteps --mode sync --workers 2 --servers 1 -- [training flags]");
  // From the start: a SIGTERM or SIGINT while the job starts ends it with its summary, before its
  // address is shared (Schedule), so that every process stops at once. Before the log file: the
  // launcher signals the scheduler once that file exists.
  tteps::CatchInterrupts();
  tteps::StartLogFile("scheduler");
  tteps::JobConfig config;
  try {
    config = tteps::scheduler::ConfigFromFlags();
    torch::set_num_threads(config.train.threads);
    // A GPU that is not there stops the job here, before mpirun starts anything (--check).
    if (config.train.deterministic) tteps::MakeDeterministic();
    tteps::ResolveDevice(config.train.device, tteps::LocalRank());
    if (FLAGS_check) {
      tteps::scheduler::CheckFiles(config);
      const std::string out_dir = tteps::OutDirProblem(config.output.out_dir);
      if (!out_dir.empty()) throw tteps::OutDirRefused(out_dir);
      const std::string curve_dir = tteps::NodeOptionsFromFlags().curve_dir;
      if (!curve_dir.empty()) tteps::LoadCurveKeys(curve_dir);
      return 0;
    }
  } catch (const std::exception& e) {
    LOG(ERROR) << e.what();
    if (FLAGS_check) return 1;
    // Under mpirun the other ranks wait for this one: end them too (RunNode does).
    return tteps::RunNode(tteps::Role::kScheduler, tteps::NodeOptionsFromFlags(),
                          [](tteps::Bootstrap&) { return 1; });
  }
  const tteps::NodeOptions node = tteps::NodeOptionsFromFlags();
  return tteps::RunNode(tteps::Role::kScheduler, node, [&](tteps::Bootstrap& boot) {
    try {
      return tteps::scheduler::Schedule(boot, node, config);
    } catch (const std::exception& e) {
      // The launcher's verdict repeats the cause from summary.json.
      tteps::scheduler::WriteFailure(config, e.what());
      throw;
    }
  });
}
