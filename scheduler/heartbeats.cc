#include "scheduler/heartbeats.h"

#include <glog/logging.h>

#include "common/busy_peers.h"
#include "common/cereal_body.h"
#include "common/json_writer.h"

namespace tteps::scheduler {

Heartbeats::Heartbeats(JobState& job)
    : job_(job), watch_(job.opts.config.cluster.timeout_s, job.opts.step_timeout_s) {}

void Heartbeats::OnHeartbeat(Node& node, const Message& m) {
  HeartbeatBody body;
  try {
    body = DecodeCereal<HeartbeatBody>(m.header.text);
  } catch (const CodecError& e) {
    LOG(ERROR) << "heartbeat of " << node.info.Name() << " with a garbled body: " << e.what();
  }
  if (node.info.role == Role::kWorker) watch_.Heard(node.info.id, body.computing, Clock::now());
  if (body.want_view && !node.lost) {
    LOG(WARNING) << node.info.Name() << " asked for the whole view (it missed one)";
    job_.SendWholeView(node);
  }
  if (body.view > node.view) {
    node.view = body.view;
    job_.RecordViewsFollowed();
  }
  // O(1) for a worker, a bit per worker for a server (the answers of a heartbeat interval grow
  // with workers x servers, not workers squared).
  HeartbeatAck ack;
  if (node.info.role == Role::kWorker) {
    ack.others_computing = watch_.count() > (watch_.IsComputing(node.info.id) ? 1u : 0u);
  } else {
    for (int32_t w : watch_.Computing()) {
      if (!job_.members.IsLost(w)) ack.SetComputing(w);
    }
  }
  Header h;
  h.type = MsgType::kHeartbeat;
  h.text = EncodeCereal(ack);
  job_.nodes.Send(m.peer, h);
}

std::string Heartbeats::CheckLongSteps() {
  for (int w : job_.members.lost()) watch_.Forget(w);
  const auto now = Clock::now();
  for (const auto& s : watch_.TakeLong(now)) {
    job_.out->AppendMetrics(JsonObject()
                                .Add("type", "long_step")
                                .Add("worker", static_cast<int64_t>(s.worker))
                                .Add("step", s.step)
                                .Add("computing_s", s.computing_s)
                                .Add("wall_s", job_.WallSeconds()));
    LOG(WARNING) << job_.nodes.WorkerName(s.worker) << " has computed step " << s.step << " for "
                 << static_cast<int>(s.computing_s)
                 << " s, longer than --timeout_s: its heartbeats say it computes, so the others "
                 << "wait for it (up to --step_timeout_s " << job_.opts.step_timeout_s << " s)";
  }
  if (const auto over = watch_.OverLimit(now)) {
    return job_.nodes.WorkerName(over->worker) + " has computed step " +
           std::to_string(over->step) + " for " +
           std::to_string(static_cast<int>(over->computing_s)) + " s (--step_timeout_s " +
           std::to_string(static_cast<int>(job_.opts.step_timeout_s)) + ")";
  }
  return "";
}

}  // namespace tteps::scheduler
