// The evaluations' outcomes as the job keeps them: a metrics line each, --patience's early stop,
// the best one and the final one (for summary.json).
#pragma once

#include <cstdint>
#include <string>

#include "common/patience.h"
#include "common/run_output.h"
#include "scheduler/evaluation.h"

namespace tteps::scheduler {

class EvalRecord {
 public:
  EvalRecord(int64_t patience, RunOutput* out)
      : patience_(patience), evaluations_(patience), out_(out) {}
  // Records `r` (`wall_s`: the job's age). Returns true once, for the evaluation after which
  // training stops early (--patience; only while `training`).
  bool Add(const EvalOutcome& r, bool training, double wall_s);
  bool has_final() const { return has_final_; }
  // JSON; empty: none yet ("null" for the final one: no evaluation trips).
  const std::string& final_json() const { return final_; }
  const std::string& best_json() const { return best_; }
  const std::string& early_stop_json() const { return early_stop_; }

 private:
  Patience patience_;
  int64_t evaluations_;
  RunOutput* out_;
  bool has_final_ = false;
  std::string final_, best_, early_stop_;
};

}  // namespace tteps::scheduler
