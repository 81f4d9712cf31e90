#include "worker/local_run.h"

#include <glog/logging.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/atomic_file.h"
#include "common/interrupt.h"
#include "common/peak_memory.h"
#include "common/run_output.h"
#include "common/trace.h"
#include "model/best_weights.h"
#include "model/dataset.h"
#include "model/deeptte/checkpoint.h"
#include "model/deeptte/compute_path.h"
#include "model/model_params.h"
#include "worker/local_trainer.h"
#include "worker/model_setup.h"

namespace tteps {
namespace {

// Runs the trainer (with --trace's timeline) and saves model_last.pt (the last weights) and
// model.pt (the best evaluated ones with --keep_best, else the last too). A failure (a diverged
// model, a full disk) is written to summary.json, if it still can be, and thrown on.
TrainResult TrainAndSave(LocalTrainer& trainer, deeptte::DeepTTE& model, const JobConfig& config,
                         RunOutput* out) {
  std::unique_ptr<TraceFile> trace_file;
  std::unique_ptr<Tracer> tracer;
  if (!config.output.trace.empty()) {
    trace_file = std::make_unique<TraceFile>(config.output.trace);
    tracer = std::make_unique<Tracer>(200, "local worker",
                                      [&](std::string events) { trace_file->Append(events); });
    trainer.set_tracer(tracer.get());
  }
  try {
    TrainResult r = trainer.Run();
    if (tracer) {
      tracer->Flush();
      trace_file->Close();
    }
    deeptte::SaveModel(model, out->Path("model_last.pt"));
    if (r.best.has()) CopyParamsIn(*model, LayoutOf(*model), r.best.params().data());
    deeptte::SaveModel(model, out->Path("model.pt"));
    return r;
  } catch (const std::exception& e) {
    try {
      out->WriteSummary(
          JsonObject().Add("mode", "local").Add("status", "failed").Add("error", e.what()));
    } catch (const std::exception& also) {
      LOG(ERROR) << "no summary.json: " << also.what();
    }
    throw;
  }
}

// summary.json of a local job (the fields a distributed job's has, for one worker).
JsonObject LocalSummary(const TrainResult& r, const Dataset& dataset, const JobConfig& config,
                        int64_t parameters, int interrupted, const RunOutput& out) {
  const MemoryPeaks mem = PeakMemory();
  JsonObject summary;
  summary.Add("mode", "local").Add("status", interrupted ? "interrupted" : "done");
  if (interrupted) summary.Add("signal", SignalName(interrupted));
  summary.Add("bad_records_skipped", dataset.skipped)
      .Add("data", dataset.Facts())
      .Add("workers", 1)
      .Add("servers", 0)
      .Add("epochs", r.epochs)
      .Add("steps", r.steps)
      .Add("batch_size", config.train.batch_size)
      .Add("trips", r.trips)
      .Add("trips_per_s", r.trips / r.train_seconds)
      .Add("train_seconds", r.train_seconds)
      .Add("wall_seconds", r.wall_seconds)
      .Add("startup_s", r.startup_s)
      .Add("final_loss", r.last_loss)
      .Add("parameters", parameters)
      .Add("threads", config.train.threads)
      .Add("peak_rss_mb", JsonObject().Add("workers", std::vector<double>{PeakRssMb()}))
      .Add("peak_private_mb", JsonObject().Add("workers", std::vector<double>{mem.private_mb}))
      .Add("peak_shared_mb", JsonObject().Add("workers", std::vector<double>{mem.shared_mb}))
      .Add("cpu_gemm", JsonObject().Add("workers", std::vector<std::string>{deeptte::GemmName()}))
      .Add("blas", JsonObject().Add("workers", std::vector<std::string>{deeptte::BlasName()}))
      .AddRaw("final_eval", r.evaluated ? r.final_eval.ToJson().str() : "null");
  if (!r.evaluated) summary.Add("evaluation", "none: no evaluation trips (--eval_fraction 0)");
  if (r.best.has()) summary.AddRaw("best_eval", BestEvalJson(r.best.step(), r.best.eval_json()));
  if (r.early_stop_step >= 0) {
    summary.Add("early_stop", JsonObject()
                                  .Add("evaluation_step", r.early_stop_step)
                                  .Add("patience", config.train.patience));
  }
  summary.Add("model", out.Path("model.pt")).Add("model_last", out.Path("model_last.pt"));
  return summary;
}

}  // namespace

int RunLocal(const JobConfig& config) {
  RunOutput out(config.output.out_dir);  // first: a busy or finished out_dir is refused at once
  CatchInterrupts();  // SIGTERM / SIGINT: training stops after its step, the summary says so
  const torch::Device device = PrepareDevice(config.train);
  auto dataset = LoadDataset(config.data, config.model.kernel_size);
  LOG(INFO) << "data: " << dataset.description;
  for (const std::string& w : dataset.warnings)
    std::fprintf(stderr, "[local] warning: %s\n", w.c_str());
  CheckBatchFits(config.train, dataset.train->size());
  if (dataset.skipped > 0) {
    std::fprintf(stderr, "[local] %llu bad records skipped (--bad_records skip; see the log)\n",
                 static_cast<unsigned long long>(dataset.skipped));
  }
  deeptte::DeepTTE model = BuildModel(config, dataset.stats, device);
  const ParamLayout layout = LayoutOf(*model);
  LOG(INFO) << "parameters: " << layout.Describe() << " (the configuration is in config.json)";
  WriteFileAtomically(out.Path("config.json"), config.ToJson());

  LocalTrainer trainer(model, *dataset.train, *dataset.eval, config, &out);
  const TrainResult r = TrainAndSave(trainer, model, config, &out);
  const int interrupted = InterruptSignal();  // read once: the summary and the exit code agree
  out.WriteSummary(LocalSummary(r, dataset, config, layout.total(), interrupted, out));
  LOG(INFO) << "wrote " << out.Path("summary.json") << ", " << out.Path("metrics.jsonl") << ", "
            << out.Path("model.pt");
  std::printf("%s\n", JsonObject()
                          .AddRaw("final_eval", r.evaluated ? r.final_eval.ToJson().str() : "null")
                          .Add("trips_per_s", r.trips / r.train_seconds)
                          .Add("out_dir", out.dir())
                          .str()
                          .c_str());
  if (interrupted) {
    std::fprintf(stderr,
                 "[local] interrupted (%s) after step %lld; the model of that step is saved\n",
                 SignalName(interrupted).c_str(), static_cast<long long>(r.steps));
    return 128 + interrupted;
  }
  return 0;
}

}  // namespace tteps
