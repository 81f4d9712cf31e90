// What a server knows of its workers beyond the shard: those the scheduler declared lost, and
// (async / SSP) the joiners that took lost workers' places. A plain record.
#pragma once

#include <cstdint>
#include <map>
#include <set>

namespace tteps::server {

struct WorkerPlaces {
  std::set<int> lost;                      // declared lost (their ids)
  std::map<int, int> joined;               // slot -> the worker that joined for it
  std::map<int, int64_t> pending_rejoins;  // a backup: slot -> clock, until its order says
  std::set<int> rejoined;                  // joiners whose place the shard has given them

  // The slot a worker's pushes count for: its own (below `workers`), or the one it joined
  // for; -1: none.
  int SlotOf(int worker, int workers) const {
    if (worker >= 0 && worker < workers) return worker;
    for (const auto& [slot, joiner] : joined) {
      if (joiner == worker) return slot;
    }
    return -1;
  }
};

}  // namespace tteps::server
