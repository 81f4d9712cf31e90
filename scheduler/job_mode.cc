#include "scheduler/job_mode.h"

#include <stdexcept>

namespace tteps::scheduler {

JobMode::JobMode(const ExchangeConfig& x)
    : mode_(x.mode),
      ring_rebuilds_(x.mode == Mode::kRing && x.allreduce == "ring" && x.ring_transport == "tcp") {
  if (RunsAlone(mode_)) {
    throw std::invalid_argument("--mode local runs in one process: tteps-worker --mode local");
  }
}

JobMode::JobMode(Mode mode)
    : JobMode([mode] {
        ExchangeConfig x;
        x.mode = mode;
        return x;
      }()) {}

bool JobMode::slices() const { return mode_ == Mode::kSync || mode_ == Mode::kRing; }

bool JobMode::places() const { return mode_ == Mode::kAsync || mode_ == Mode::kSsp; }

bool JobMode::lockstep() const { return mode_ == Mode::kSync; }

std::string JobMode::WorkerLossRefusal() const {
  if (servers() || ring_rebuilds_) return "";
  if (mode_ == Mode::kRing) {
    return "the ring goes on without a worker only over TCP links (--allreduce ring "
           "--ring_transport tcp)";
  }
  return std::string(name()) + " mode cannot go on without a worker";
}

std::string JobMode::JoinRefusal() const {
  if (servers()) return "";
  return std::string("a ") + name() +
         " job takes no joiner: its ring is built at the start and rebuilds only without a lost "
         "worker (sync, async and SSP jobs take joiners)";
}

}  // namespace tteps::scheduler
