// What an exchange asks of the job's membership, which the scheduler decides
// (worker/scheduler_link.h answers it for a worker of a distributed job).
#pragma once

#include <cstddef>
#include <vector>

#include "common/lost_servers.h"

namespace tteps {

class MembershipLink {
 public:
  virtual ~MembershipLink() = default;
  // Sync and SSP: the view changed this worker's slices (one to adopt) or paused the job; a
  // wait for the next weights ends (ExchangeResult::view_changed).
  virtual bool ViewChanged() = 0;
  // A rollback's view came: the exchange's waits abort (the step is given up; the worker trains
  // again on the new map).
  virtual bool RollbackPending() = 0;
  // --replicas: the servers declared lost (their ranges are read from replicas). Lives as long
  // as the link.
  virtual const LostServers& lost_servers() = 0;
  // The workers declared lost so far, in the order declared, and their count (the ring is
  // rebuilt without them).
  virtual std::vector<int> LostWorkers() = 0;
  virtual size_t lost_worker_count() = 0;
};

}  // namespace tteps
