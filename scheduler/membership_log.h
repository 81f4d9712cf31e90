// Every membership event of a job (a loss, a join, a pause, a rollback), as it happens: a
// metrics line, one console line, and in order for summary.json's "membership".
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/json_writer.h"
#include "common/run_output.h"

namespace tteps::scheduler {

class MembershipLog {
 public:
  explicit MembershipLog(RunOutput* out) : out_(out) {}
  void Record(const JsonObject& event, const std::string& console);
  // Where each event's console line goes too (TensorBoard's text), if anywhere.
  void set_text_sink(std::function<void(const std::string&)> sink) { sink_ = std::move(sink); }
  // The events so far as a JSON array.
  std::string Json() const;
  size_t size() const { return events_.size(); }

 private:
  RunOutput* out_;
  std::vector<std::string> events_;
  std::function<void(const std::string&)> sink_;
};

}  // namespace tteps::scheduler
