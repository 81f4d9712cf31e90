// tteps-worker: trains DeepTTE. --mode=local trains in this one process (the reference run).
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <torch/torch.h>

#include <cstdio>

#include "common/init.h"
#include "common/run_output.h"
#include "worker/data/norm_stats.h"
#include "worker/deeptte/checkpoint.h"
#include "worker/local_trainer.h"
#include "worker/model_params.h"
#include "worker/worker_flags.h"

DECLARE_string(stats);

DEFINE_string(mode, "local", "training mode: local (one process, no servers)");
DEFINE_string(out_dir, "out", "output directory: metrics.jsonl, summary.json, model.pt");
DEFINE_int32(threads, 1, "LibTorch intra-op threads in this process");

namespace tteps {
namespace {

int RunLocal() {
  auto model_config = ModelConfigFromFlags();
  auto train_opts = TrainOptionsFromFlags();
  auto dataset = LoadDataset(DatasetOptionsFromFlags());
  LOG(INFO) << "data: " << dataset.description;
  auto stats = data::LoadNormStats(FLAGS_stats);

  torch::manual_seed(train_opts.seed);
  deeptte::DeepTTE model(model_config, stats);
  const ParamLayout layout = LayoutOf(*model);
  LOG(INFO) << "model: " << model_config.ToString() << "; parameters: " << layout.Describe();

  RunOutput out(FLAGS_out_dir);
  LocalTrainer trainer(model, dataset.train, dataset.eval, train_opts, &out);
  TrainResult r = trainer.Run();
  deeptte::SaveModel(model, out.Path("model.pt"));

  JsonObject summary;
  summary.Add("mode", "local")
      .Add("workers", 1)
      .Add("servers", 0)
      .Add("epochs", r.epochs)
      .Add("steps", r.steps)
      .Add("batch_size", train_opts.batch_size)
      .Add("trips", r.trips)
      .Add("trips_per_s", r.trips / r.train_seconds)
      .Add("train_seconds", r.train_seconds)
      .Add("wall_seconds", r.wall_seconds)
      .Add("final_loss", r.last_loss)
      .Add("parameters", layout.total())
      .Add("threads", FLAGS_threads)
      .Add("final_eval", r.final_eval.ToJson())
      .Add("model", out.Path("model.pt"));
  out.WriteSummary(summary);
  LOG(INFO) << "wrote " << out.Path("summary.json") << ", " << out.Path("metrics.jsonl") << ", "
            << out.Path("model.pt");
  std::printf("%s\n", JsonObject()
                          .Add("final_eval", r.final_eval.ToJson())
                          .Add("trips_per_s", r.trips / r.train_seconds)
                          .Add("out_dir", out.dir())
                          .str()
                          .c_str());
  return 0;
}

}  // namespace
}  // namespace tteps

int main(int argc, char** argv) {
  tteps::InitProgram(&argc, &argv,
                     "tteps-worker: trains the DeepTTE travel-time model.\n"
                     "  tteps-worker --mode=local [--train_data FILE] [--out_dir DIR] ...");
  torch::set_num_threads(FLAGS_threads);
  try {
    if (FLAGS_mode == "local") return tteps::RunLocal();
    LOG(ERROR) << "--mode=" << FLAGS_mode << " is not supported by this build (local only)";
    return 2;
  } catch (const std::exception& e) {
    LOG(ERROR) << e.what();
    return 1;
  }
}
