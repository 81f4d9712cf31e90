#include "scheduler/membership_log.h"

#include <glog/logging.h>

#include <cstdio>

namespace tteps::scheduler {

void MembershipLog::Record(const JsonObject& event, const std::string& console) {
  events_.push_back(event.str());
  JsonObject line;
  line.Add("type", "membership").AddMembers(event.str());
  out_->AppendMetrics(line);
  LOG(WARNING) << console;
  std::fprintf(stderr, "[tteps] %s\n", console.c_str());  // one console line per event
  if (sink_) sink_(console + "\n\n" + event.str());
}

std::string MembershipLog::Json() const {
  std::string json = "[";
  for (size_t i = 0; i < events_.size(); ++i) json += (i ? "," : "") + events_[i];
  return json + "]";
}

}  // namespace tteps::scheduler
