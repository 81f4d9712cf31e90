// Releases asked for from outside the job: `launch/tteps --release WORKER|HOST --out_dir DIR`
// writes DIR/release.request (one line: a worker id or a host name) and waits for
// DIR/release.answer ("released ..." or "refused: ..."). The scheduler looks for a request at
// most every 200 ms, takes it (removes the file) and answers it once; each worker released
// leaves at its next step boundary, as on SIGTERM to it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "scheduler/node_table.h"

namespace tteps::scheduler {

class ReleaseRequests {
 public:
  explicit ReleaseRequests(const std::string& dir);
  // The request's text (trimmed), if one arrived since the last look; nullopt otherwise.
  std::optional<std::string> Take();
  // Written whole (write-then-rename), so the launcher never reads half an answer.
  void Answer(const std::string& text) const;

 private:
  std::string request_, answer_;
  Clock::time_point next_look_{};
};

// The workers `what` names among `live` (the workers that may leave: in the job, not finished):
// the one whose id it is, or every one on the host of that name. Empty, with `error` saying
// why, where it names none or would release them all (the job needs one to go on).
std::vector<const Node*> ReleaseTargets(const std::string& what,
                                        const std::vector<const Node*>& live, std::string* error);

}  // namespace tteps::scheduler
