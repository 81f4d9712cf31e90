// Which local address a node listens on and which one it tells its peers. A node binds only
// that address, never every interface: loopback when the whole job runs on one host, else the
// interface asked for (--bind_interface), the address --advertise_host names, or the host's one
// outside address.
#pragma once

#include <string>
#include <vector>

namespace tteps {

struct NodeAddress {
  std::string bind;       // a numeric IPv4 address of this host
  std::string advertise;  // what peers connect to (the bind address unless --advertise_host)
};

// Throws std::runtime_error saying what to pass when no address can be chosen (an unknown
// interface, an --advertise_host that is not this host's, a host with several outside
// addresses and no --bind_interface).
NodeAddress ChooseAddress(const std::string& advertise_host, const std::string& bind_interface,
                          bool one_host);

// The IPv4 address of network interface `name` (e.g. "eth0", "lo"); throws if it has none.
std::string InterfaceAddress(const std::string& name);
// `host` (a name or a dotted address) as a dotted IPv4 address; throws if it does not resolve.
std::string ResolveIPv4(const std::string& host);
// This host's IPv4 addresses, one per interface that is up, loopback included.
std::vector<std::string> LocalAddresses();
bool IsLoopback(const std::string& ipv4);

}  // namespace tteps
