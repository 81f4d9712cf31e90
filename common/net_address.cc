#include "common/net_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>

#include <algorithm>
#include <stdexcept>

#include "common/cluster_map.h"

namespace tteps {
namespace {

std::string Dotted(const sockaddr* a) {
  char buf[INET_ADDRSTRLEN] = {0};
  inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(a)->sin_addr, buf, sizeof buf);
  return buf;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// Calls f(interface name, dotted address) for every IPv4 address of an interface that is up.
template <class F>
void ForEachAddress(F f) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) throw std::runtime_error("cannot list the network interfaces");
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP)) {
      f(std::string(i->ifa_name), Dotted(i->ifa_addr));
    }
  }
  freeifaddrs(list);
}

}  // namespace

bool IsLoopback(const std::string& ipv4) { return ipv4.rfind("127.", 0) == 0; }

std::vector<std::string> LocalAddresses() {
  std::vector<std::string> out;
  ForEachAddress([&](const std::string&, const std::string& a) { out.push_back(a); });
  return out;
}

std::string InterfaceAddress(const std::string& name) {
  std::string found;
  std::vector<std::string> names;
  ForEachAddress([&](const std::string& n, const std::string& a) {
    names.push_back(n);
    if (n == name && found.empty()) found = a;
  });
  if (found.empty()) {
    throw std::runtime_error("--bind_interface " + name + ": no IPv4 address on an interface " +
                             "of that name that is up (this host has: " + Join(names) + ")");
  }
  return found;
}

std::string ResolveIPv4(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || !res) {
    throw std::runtime_error("cannot resolve " + host + " to an IPv4 address: " + gai_strerror(rc));
  }
  const std::string a = Dotted(res->ai_addr);
  freeaddrinfo(res);
  return a;
}

NodeAddress ChooseAddress(const std::string& advertise_host, const std::string& bind_interface,
                          bool one_host) {
  NodeAddress a;
  const std::vector<std::string> local = LocalAddresses();
  const auto is_local = [&](const std::string& ip) {
    return IsLoopback(ip) || std::find(local.begin(), local.end(), ip) != local.end();
  };
  if (!bind_interface.empty()) {
    a.bind = InterfaceAddress(bind_interface);
  } else if (!advertise_host.empty()) {
    a.bind = ResolveIPv4(advertise_host);
    if (!is_local(a.bind)) {
      throw std::runtime_error("--advertise_host " + advertise_host + " is " + a.bind +
                               ", not an address of this host (" + Join(local) +
                               "): name the interface to listen on with --bind_interface");
    }
  } else if (one_host) {
    a.bind = "127.0.0.1";
  } else {
    // Across hosts: the host name's address if it is an outside one (Debian maps the name to
    // 127.0.1.1, which peers cannot reach), else the host's only outside address.
    std::string named;
    try {
      named = ResolveIPv4(HostName());
    } catch (const std::exception&) {
    }
    std::vector<std::string> outside;
    for (const auto& ip : local) {
      if (!IsLoopback(ip)) outside.push_back(ip);
    }
    if (!named.empty() && !IsLoopback(named) && is_local(named)) {
      a.bind = named;
    } else if (outside.size() == 1) {
      a.bind = outside[0];
    } else {
      throw std::runtime_error(
          "the job spans several hosts and this one (" + HostName() + ") has " +
          (outside.empty() ? std::string("no outside address")
                           : "several outside addresses (" + Join(outside) + ")") +
          ": choose the interface peers reach it on with --bind_interface");
    }
  }
  a.advertise = advertise_host.empty() ? a.bind : advertise_host;
  return a;
}

}  // namespace tteps
