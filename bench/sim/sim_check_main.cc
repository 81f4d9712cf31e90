// tteps-sim-check: what an async job of simulated workers left in its model.pt. Every push of
// such a job is Shape (bench/sim/synthetic.h), applied as w + Shape * -lr, exactly, so each key
// reads as Initial - lr * n * Shape for a whole number n, the pushes applied to it. Prints one
// JSON line: the runs of keys with the same n in key order ([begin, end, n]: ReadPushes) and the
// keys that no whole n explains.
//
//   tteps-sim-check --model out/model.pt --lr 0.0625
#include <gflags/gflags.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "bench/sim/synthetic.h"
#include "common/init.h"
#include "model/deeptte/checkpoint.h"
#include "model/model_params.h"

DEFINE_string(model, "", "the job's model.pt");
DEFINE_double(lr, 0.0625, "the job's --lr");

int main(int argc, char** argv) {
  tteps::InitProgram(
      &argc, &argv,
      "tteps-sim-check: the pushes an async job of simulated workers applied, per key run");
  try {
    if (FLAGS_model.empty()) throw std::invalid_argument("--model: the job's model.pt");
    tteps::deeptte::DeepTTE model = tteps::deeptte::LoadModel(FLAGS_model);
    const tteps::ParamLayout layout = tteps::LayoutOf(*model);
    std::vector<float> w(layout.total());
    tteps::CopyParamsOut(*model, layout, w.data());
    const tteps::sim::PushRuns r = tteps::sim::ReadPushes(w, FLAGS_lr);
    std::string runs;
    for (const auto& run : r.runs) {
      runs += (runs.empty() ? "" : ",") + std::string("[") + std::to_string(run.begin) + "," +
              std::to_string(run.end) + "," + std::to_string(run.n) + "]";
    }
    std::printf("{\"keys\":%zu,\"runs\":[%s],\"unexplained\":%lld,\"first_unexplained\":%lld}\n",
                w.size(), runs.c_str(), static_cast<long long>(r.unexplained),
                static_cast<long long>(r.first_unexplained));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tteps-sim-check: %s\n", e.what());
    return 1;
  }
}
