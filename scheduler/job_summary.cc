#include "scheduler/job_summary.h"

#include <vector>

#include "common/checkpoint_files.h"

namespace tteps::scheduler {
namespace {

void AddWork(const JobFacts& f, JsonObject& s) {
  const CoordinatorOptions& opts = *f.opts;
  const Mode mode = opts.config.exchange.mode;
  const WorkerProgress sums = f.book->Sums();
  const int64_t trips = sums.trips, epochs = f.book->empty() ? 0 : sums.epoch + 1;
  const double per = sums.steps_timed > 0 ? 1.0 / sums.steps_timed : 0;
  s.Add("workers", opts.num_workers)
      .Add("slices", opts.config.exchange.slices)
      .Add("servers", f.servers)
      .Add("epochs", epochs)
      .Add("steps", f.steps)
      .Add("planned_steps", opts.total_steps)
      .Add("steps_redone", f.steps_redone)
      .Add("stopped_by_time_budget", f.stopped_by_time_budget)
      .Add("batch_size", opts.config.train.batch_size)
      .Add("trips", trips)
      .Add("trips_per_s", f.train_s > 0 ? trips / f.train_s : 0.0)
      .Add("train_seconds", f.train_s)
      .Add("wall_seconds", f.wall_s)
      .Add("startup_s", f.startup_s)
      .Add("parameters", opts.param_count);
  JsonObject step_time;
  step_time.Add("compute", sums.compute_s * per);
  if (UsesServers(mode)) {
    step_time.Add("push", sums.push_s * per).Add("pull", sums.pull_s * per);
  } else {
    step_time.Add("allreduce", sums.allreduce_s * per);
  }
  s.Add("step_time_s", step_time.Add("wait", sums.wait_s * per));
  // Payload bytes one worker sent in pushes and received in pull replies per step, the mean over
  // workers and steps (headers not counted; the dense model is parameters x 4 bytes).
  if (UsesServers(mode)) {
    s.Add("bytes_per_step",
          JsonObject().Add("push", sums.push_bytes * per).Add("pull", sums.pull_bytes * per));
  }
}

// {"scheduler", "workers": [...], "servers": [...]} of one memory figure.
JsonObject PeakMemoryJson(const JobFacts& f, double WorkerProgress::*worker_field,
                          double server::ServerStats::*server_field, double scheduler) {
  std::vector<double> servers;
  for (const auto& [id, stats] : *f.server_stats) servers.push_back(stats.*server_field);
  return JsonObject()
      .Add("scheduler", scheduler)
      .Add("workers", f.book->Peaks(worker_field))
      .Add("servers", servers);
}

void AddServersAndRefusals(const JobFacts& f, JsonObject& s) {
  const auto& stats_of = *f.server_stats;
  // Every server sees every push, so one server's staleness histogram describes the job (the
  // lowest that reported: server 0 unless it was lost).
  if (!stats_of.empty()) s.Add("server_stats", stats_of.begin()->second.ToJson());
  // Each server's state hash at the end: replicas of a range (--replicas) hold the same. And
  // its version: in async and SSP mode the pushes it applied (each its own step).
  JsonObject hashes, versions;
  for (const auto& [id, stats] : stats_of) {
    hashes.Add(std::to_string(id), server::HexHash(stats.state_hash));
    versions.Add(std::to_string(id), stats.version);
  }
  if (!stats_of.empty()) s.Add("server_state_hashes", hashes).Add("server_versions", versions);
  // What was refused, summed over the servers and the scheduler (each refusal is also in that
  // process's log): messages (malformed, mismatched or poisoned; non_finite of those) and
  // connections with an unknown CURVE key.
  int64_t errors = f.refused, non_finite = 0;
  int64_t unauthenticated = f.opts->curve ? f.opts->curve->refused() : 0;
  for (const auto& [id, stats] : stats_of) {
    errors += stats.errors;
    non_finite += stats.non_finite;
    unauthenticated += stats.unauthenticated;
  }
  s.Add("refused", JsonObject()
                       .Add("messages", errors)
                       .Add("non_finite", non_finite)
                       .Add("unauthenticated", unauthenticated));
  s.Add("curve", f.opts->curve != nullptr);
}

}  // namespace

JsonObject SummaryJson(const JobFacts& f) {
  const CoordinatorOptions& opts = *f.opts;
  JsonObject s;
  s.Add("mode", ModeName(opts.config.exchange.mode)).Add("status", f.status);
  if (!f.signal.empty()) s.Add("signal", f.signal);
  s.Add("bad_records_skipped", opts.bad_records_skipped).Add("data", opts.data_facts);
  // Where a resumed job starts from (--resume), when the servers write checkpoints.
  if (UsesServers(opts.config.exchange.mode) && opts.config.output.checkpoint_every > 0) {
    s.Add("checkpoint_dir", opts.config.output.checkpoint_dir);
  }
  if (opts.resume_version >= 0) {  // --resume: the checkpoint it started from
    s.Add("resumed_from", JsonObject()
                              .Add("checkpoint_dir", opts.config.output.resume)
                              .Add("version", opts.resume_version));
  }
  AddWork(f, s);
  // Private memory (RssAnon) and shared pages (mapped files: a trip store's shards) apart.
  s.Add("peak_rss_mb", PeakMemoryJson(f, &WorkerProgress::peak_rss_mb,
                                      &server::ServerStats::peak_rss_mb, f.rss_mb));
  s.Add("peak_private_mb", PeakMemoryJson(f, &WorkerProgress::peak_private_mb,
                                          &server::ServerStats::peak_private_mb, f.private_mb));
  s.Add("peak_shared_mb", PeakMemoryJson(f, &WorkerProgress::peak_shared_mb,
                                         &server::ServerStats::peak_shared_mb, f.shared_mb));
  // What computed each worker's products on the CPU (workers may run on different CPUs).
  s.Add("cpu_gemm", JsonObject().Add("workers", f.book->Texts(&WorkerProgress::cpu_gemm)));
  s.Add("blas", JsonObject().Add("workers", f.book->Texts(&WorkerProgress::blas)));
  AddServersAndRefusals(f, s);
  s.Add("accumulation_policy", opts.config.policy.name);
  if (f.decisions >= 0) s.Add("accumulation_decisions", f.decisions);
  if (!f.policy_record.empty()) s.AddRaw("policy", f.policy_record);
  if (!f.policy_error.empty()) s.Add("policy_error", f.policy_error);
  if (!f.final_eval.empty()) s.AddRaw("final_eval", f.final_eval);
  if (f.final_eval == "null") {
    s.Add("evaluation", "none: no evaluation trips (--eval_fraction 0)");
  }
  if (!f.best_eval.empty()) s.AddRaw("best_eval", f.best_eval);
  if (!f.early_stop.empty()) s.AddRaw("early_stop", f.early_stop);
  // Every worker and server lost while the job went on, in order.
  s.AddRaw("membership", f.membership);
  s.AddRaw("control_messages", f.control_messages);
  if (!f.error.empty()) s.Add("error", f.error);
  if (!f.model.empty()) s.Add("model", f.model).Add("model_last", f.model_last);
  return s;
}

}  // namespace tteps::scheduler
