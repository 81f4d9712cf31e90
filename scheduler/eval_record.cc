#include "scheduler/eval_record.h"

#include <glog/logging.h>

#include <cstdio>

#include "common/json_writer.h"

namespace tteps::scheduler {

bool EvalRecord::Add(const EvalOutcome& r, bool training, double wall_s) {
  const bool measured = r.json != "null";  // "null": no evaluation trips
  if (measured) {
    JsonObject line;
    line.Add("type", "eval").Add("step", r.step).Add("version", r.version);
    line.Add("wall_s", wall_s).Add("train_s", r.train_s).AddRaw("eval", r.json);
    out_->AppendMetrics(line);
    LOG(INFO) << "eval at step " << r.step << " (version " << r.version << "): " << r.json;
  }
  bool stop = false;
  if (!r.final && measured && training && early_stop_.empty() && patience_.Offer(r.mape)) {
    early_stop_ = JsonObject()
                      .Add("evaluation_step", r.step)
                      .Add("patience", evaluations_)
                      .Add("best_mape", patience_.best())
                      .str();
    const std::string text = "no lower MAPE in " + std::to_string(evaluations_) +
                             " evaluations (--patience; best " + JsonNumber(patience_.best()) +
                             "): training stops";
    LOG(WARNING) << text;
    std::fprintf(stderr, "[tteps] %s\n", text.c_str());
    stop = true;
  }
  if (r.best) {
    best_ = JsonObject()
                .Add("step", r.step)
                .Add("version", r.version)
                .Add("train_s", r.train_s)
                .AddMembers(r.json)
                .str();
  }
  if (r.final) {
    has_final_ = true;
    final_ = r.json;
  }
  return stop;
}

}  // namespace tteps::scheduler
