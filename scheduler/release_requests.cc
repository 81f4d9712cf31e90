#include "scheduler/release_requests.h"

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "common/atomic_file.h"

namespace tteps::scheduler {

ReleaseRequests::ReleaseRequests(const std::string& dir)
    : request_(dir + "/release.request"), answer_(dir + "/release.answer") {}

std::optional<std::string> ReleaseRequests::Take() {
  const auto now = Clock::now();
  if (now < next_look_) return std::nullopt;
  next_look_ = now + std::chrono::milliseconds(200);
  std::ifstream in(request_);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  std::remove(request_.c_str());
  std::string what = text.str();
  const auto first = what.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return std::string();
  return what.substr(first, what.find_last_not_of(" \t\r\n") - first + 1);
}

void ReleaseRequests::Answer(const std::string& text) const {
  WriteFileAtomically(answer_, text + "\n");
}

namespace {

std::string Listed(const std::vector<const Node*>& live, bool hosts) {
  std::set<std::string> seen;
  std::string out;
  for (const Node* n : live) {
    const std::string item = hosts ? n->info.host : std::to_string(n->info.id);
    if (seen.insert(item).second) out += (out.empty() ? "" : ", ") + item;
  }
  return out;
}

}  // namespace

std::vector<const Node*> ReleaseTargets(const std::string& what,
                                        const std::vector<const Node*>& live, std::string* error) {
  std::vector<const Node*> targets;
  if (what.empty()) {
    *error = "the request names no worker or host";
    return targets;
  }
  const bool is_id = what.find_first_not_of("0123456789") == std::string::npos;
  for (const Node* n : live) {
    if (is_id ? std::to_string(n->info.id) == what : n->info.host == what) targets.push_back(n);
  }
  if (targets.empty()) {
    *error = is_id ? "worker " + what +
                         " is not a live worker of this job (live: " + Listed(live, false) + ")"
                   : "no live worker runs on host " + what + " (hosts: " + Listed(live, true) + ")";
  } else if (targets.size() >= live.size()) {
    *error = "releasing " + what +
             " would leave no worker (a job goes on with at least one; "
             "SIGTERM to the launcher stops it)";
    targets.clear();
  }
  return targets;
}

}  // namespace tteps::scheduler
