// The scheduler's /metrics endpoint for Prometheus (--metrics_port): cpp-httplib (Debian's
// libcpp-httplib) serves, from its own threads, the text last published by the coordinator's
// loop. (civetweb could not start its threads in the scheduler: it asks for a stack smaller
// than LibTorch's static thread-local storage, and pthread_create refuses with EINVAL.)
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace httplib {
class Server;
}

namespace tteps::scheduler {

class MetricsEndpoint {
 public:
  // Listens on host:port; throws std::runtime_error naming the address where it cannot.
  MetricsEndpoint(const std::string& host, int port);
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  void Publish(std::string text);
  const std::string& address() const { return address_; }

 private:
  std::string address_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::mutex mu_;
  std::string text_;
};

}  // namespace tteps::scheduler
