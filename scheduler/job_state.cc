#include "scheduler/job_state.h"

#include <glog/logging.h>

#include <stdexcept>
#include <utility>

#include "common/clock.h"
#include "common/topics/worker_topics.h"
#include "common/view_update.h"
#include "scheduler/registration.h"

namespace tteps::scheduler {

JobState::JobState(zmq::socket_t& socket, CoordinatorOptions options, RunOutput* output,
                   AccumulationPolicy* accumulation_policy)
    : opts(std::move(options)),
      mode(opts.config.exchange),
      out(output),
      nodes(socket),
      members(mode, opts.num_workers, static_cast<int>(opts.config.exchange.slices)),
      schedules(static_cast<int>(opts.config.exchange.slices), opts.config.exchange.accumulation,
                opts.config.output),
      policy(accumulation_policy, output),
      log(output) {
  // --slices past the workers: an accumulation policy decides each worker's own slice (a
  // joiner's once it takes one over); the slices adopted from the start keep their accumulation,
  // as a lost worker's do, and the policy's split of the global batch leaves them out.
  for (int slice = 0; slice < members.slices(); ++slice) {
    if (members.OwnSliceOf(members.OwnerOf(slice)) != slice) {
      policy.SetOrphaned(slice, schedules.LastAccumulationOf(slice));
    }
  }
}

void JobState::Apply(const MembershipChange& change) {
  for (int slice : change.orphaned) policy.SetOrphaned(slice, schedules.LastAccumulationOf(slice));
  for (int slice : change.owned) policy.SetOwned(slice);
  SendView(/*now=*/!change.goes.empty());  // the servers get a joiner's place before its go
  for (const JoinerGo& go : change.goes) {
    // With the slice's schedule: the joiner draws what its lost worker would have.
    nodes.Command(Role::kWorker, topics::kGo, {go.step, schedules.Text(go.slice)}, go.worker);
    // And the view in force, should it have registered after the last one (a pause).
    for (Node& n : nodes.all()) {
      if (n.info.role == Role::kWorker && n.info.id == go.worker && !n.done &&
          n.view_sent != view_serial) {
        SendWholeView(n);
      }
    }
  }
}

View JobState::WireView() const {
  View v = members.view();
  if (v.paused) v.pause_reason = pause_text;
  for (size_t s = 0; s < v.slice_owner.size(); ++s) {
    const int slice = static_cast<int>(s);
    if (members.OwnSliceOf(v.slice_owner[s]) != slice) v.schedules[slice] = schedules.Text(slice);
  }
  return v;
}

void JobState::AccumulationChanged(const NodeInfo& worker, const AccumulationChange& c) {
  const int slice = members.OwnSliceOf(worker.id);
  if (slice < 0 || slice >= members.slices() || members.OwnerOf(slice) != worker.id ||
      c.accumulation < 1 || c.accumulation > 1000000000) {
    LOG(ERROR) << "accumulation change " << c.accumulation << " from " << worker.Name()
               << " ignored";
    return;
  }
  try {
    schedules.Add(slice, c);
  } catch (const std::invalid_argument& e) {
    LOG(ERROR) << "accumulation change from " << worker.Name() << " ignored: " << e.what();
    return;
  }
  LOG(INFO) << worker.Name() << " draws " << c.accumulation << " micro-batches a step from step "
            << c.step + 1 << " (its slice's stream at " << c.position << ")";
  out->AppendMetrics(JsonObject()
                         .Add("type", "accumulation")
                         .Add("worker", worker.id)
                         .Add("slice", slice)
                         .Add("from_step", c.step + 1)
                         .Add("position", c.position)
                         .Add("accumulation", c.accumulation));
}

ViewBatch::~ViewBatch() {
  if (--job_.view_batches > 0 || !job_.view_held) return;
  try {
    job_.SendView();
  } catch (const std::exception& e) {  // a destructor must not throw (maybe while unwinding)
    LOG(ERROR) << "the membership view could not be sent: " << e.what();
  }
}

void JobState::SendView(bool now) {
  if (!now && view_batches > 0 && !members.view().remap) {
    view_held = true;
    return;
  }
  view_held = false;
  const View v = WireView();
  view_spread.Sent(v.number, v.reason, WallSeconds());
  // O(W) bytes to a node that needs the whole view, O(changes) to the others: a change reaches
  // a thousand nodes in kilobytes, not megabytes.
  const int64_t base = view_serial++;
  const std::string whole = kView.Encode(WholeView(v));
  const std::string changes = base > 0 ? kView.Encode(ViewChangesFrom(sent_view, v)) : whole;
  for (Node& n : nodes.all()) {
    if (n.lost || (n.info.role != Role::kWorker && n.info.role != Role::kServer)) continue;
    const bool holds_base = base > 0 && n.view_sent == base;
    n.view_sent =
        nodes.CommandTextTo(n.peer, kView.name, holds_base ? changes : whole) ? view_serial : -1;
  }
  sent_view = v;
}

void JobState::SendWholeView(Node& node) {
  // Not the base of the next changes: the view may differ from the last one sent to all (a
  // schedule changed since), so the node gets the next one whole too.
  nodes.CommandTextTo(node.peer, kView.name, kView.Encode(WholeView(WireView())));
  node.view_sent = -1;
}

void JobState::RecordViewsFollowed() {
  for (const JsonObject& line : view_spread.Heard(nodes, WallSeconds())) out->AppendMetrics(line);
}

void JobState::SendFirstMaps() {
  map.param_count = opts.param_count;
  map.fingerprint = opts.fingerprint;
  map.config = opts.config;
  map.resume_version = opts.resume_version;
  map.start_steps = opts.start_steps;
  schedules.Restore(opts.schedules);
  map.schedules = schedules.Encoded();
  map.data_checksum = opts.data_checksum;
  for (size_t w = 0; w < opts.start_steps.size(); ++w) book.SetStep(w, opts.start_steps[w]);
  map.servers.assign(opts.num_servers, {});
  map.workers.assign(opts.num_workers, {});
  for (const auto& n : nodes.all()) {
    (n.info.role == Role::kServer ? map.servers : map.workers).at(n.info.id) = n.info;
  }
  map.ranges = LaunchRanges(opts, map);
  for (auto& n : nodes.all()) {
    n.last_seen = Clock::now();  // heartbeats start once a node has its map
    ClusterMap m = map;
    m.your_id = n.info.id;
    nodes.SendMap(n.peer, m);
  }
  for (size_t s = 0; s < map.servers.size(); ++s) {
    LOG(INFO) << map.servers[s].Name() << " holds " << map.ranges[s].ToString();
  }
}

}  // namespace tteps::scheduler
