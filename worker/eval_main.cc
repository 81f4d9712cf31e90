// tteps-eval: evaluates a saved model.pt on a data file.
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <torch/torch.h>

#include <cstdio>
#include <fstream>

#include "common/init.h"
#include "model/dataset.h"
#include "model/deeptte/checkpoint.h"
#include "model/device.h"
#include "model/evaluator.h"

DEFINE_string(model, "", "model file written by a training run (DIR/model.pt)");
DEFINE_string(data, "", "trips to evaluate: DeepTTE JSON lines or a trip store (tteps-pack)");
DEFINE_string(predictions, "", "if set, write one predicted travel time (s) per trip, per line");
DEFINE_string(bad_records, "fail", "a malformed record: fail or skip");
DEFINE_int64(batch_size, 256, "trips per evaluation batch");
DEFINE_int32(threads, 1, "LibTorch intra-op threads");
DEFINE_string(device, "cpu", "where to evaluate: cpu, cuda or cuda:N");

int main(int argc, char** argv) {
  tteps::InitProgram(&argc, &argv,
                     "tteps-eval: evaluates a trained DeepTTE model.\n"
                     "  tteps-eval --model DIR/model.pt --data FILE [--predictions OUT]\n"
                     "Prints {\"mape\":..,\"rmse\":..,\"mae\":..,\"n\":..} on stdout.");
  torch::set_num_threads(FLAGS_threads);
  try {
    if (FLAGS_model.empty() || FLAGS_data.empty()) {
      LOG(ERROR) << "--model and --data are required";
      return 2;
    }
    const auto device = tteps::ResolveDevice(FLAGS_device, tteps::LocalRank());
    auto model = tteps::deeptte::LoadModel(FLAGS_model, device);
    std::string described;
    const auto trips =
        tteps::OpenTrips({FLAGS_data}, FLAGS_bad_records, model->config().kernel_size, &described);
    LOG(INFO) << described;
    // Nothing evaluated is not a perfect score ({"mape":0,...,"n":0} before).
    if (trips->empty()) {
      throw std::runtime_error("no trips to evaluate: " + described);
    }
    auto r = tteps::Evaluate(*model, *trips, FLAGS_batch_size, !FLAGS_predictions.empty());
    if (!FLAGS_predictions.empty()) {
      std::ofstream out(FLAGS_predictions);
      for (float p : r.predictions) out << p << '\n';
      if (!out) throw std::runtime_error("cannot write " + FLAGS_predictions);
    }
    std::printf("%s\n", r.ToJson().str().c_str());
    return 0;
  } catch (const std::exception& e) {
    const std::string what = e.what();
    // Routes not yet driven have no label to compare with: tteps-predict estimates them.
    const bool no_label = what.find("field 'time': missing") != std::string::npos ||
                          what.find("field 'time_gap': missing") != std::string::npos;
    LOG(ERROR) << what
               << (no_label ? " (tteps-eval compares estimates with the trips' `time`; "
                              "tteps-predict estimates routes without it)"
                            : "");
    return 1;
  }
}
