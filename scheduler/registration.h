// Whether a node may register with the job: at launch (its role has a free id) or as a joiner,
// and whether it reads the job's data. Pure functions of what is registered.
#pragma once

#include <string>
#include <vector>
#include <zmq.hpp>

#include "common/cluster_map.h"
#include "common/codec.h"
#include "scheduler/coordinator_options.h"
#include "scheduler/node_table.h"

namespace tteps::scheduler {

// The job's training data as the scheduler opened it (a store's checksum; empty: JSON-lines).
struct JobData {
  std::string path, checksum;
};

// Why a worker's training data is not the job's; empty if it is (or it reads the job's).
std::string DataMismatch(const NodeInfo& info, const JobData& data);

// Why `info` cannot register at launch, with `expected` nodes of its role; empty: it may (one
// started without MPI gets the next free id). `fatal`: the job cannot run (a member of it cannot
// read its data).
std::string RegistrationRefusal(const std::vector<Node>& nodes, int expected, const JobData& data,
                                NodeInfo* info, bool* fatal);

// The servers' key ranges at launch for `map`'s servers and workers: a resumed job's as in its
// checkpoint (a server restores a range only whole), else cut evenly or, with --balance_links,
// by where the processes run (scheduler/placement.h).
std::vector<KeyRange> LaunchRanges(const CoordinatorOptions& opts, const ClusterMap& map);

// A process of another tteps release sent a message (`error`): it is answered in this release's
// protocol, whose header it reads as far as the version, so that it names both versions and ends
// instead of waiting out its deadline. Returns what happened, for the log or the job's error.
std::string AnswerOtherRelease(zmq::socket_t& socket, const std::string& peer,
                               const ProtocolVersionError& error);

// A job that failed while its nodes were registering: the `missing` nodes not yet registered are
// told `reason` as their registrations arrive (they register together, right after the
// scheduler's address is shared), instead of each waiting out its registration deadline. Returns
// after `missing` answers or `limit_s`.
void RefuseLateRegistrations(zmq::socket_t& socket, NodeTable& nodes, const std::string& reason,
                             int missing, double limit_s);

// What a job across `hosts` hosts without CURVE is open to.
std::string OpenJobWarning(size_t hosts);

}  // namespace tteps::scheduler
