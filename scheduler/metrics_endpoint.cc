#include "scheduler/metrics_endpoint.h"

#if TTEPS_HAS_HTTPLIB
#include <httplib.h>
#endif

#include <chrono>
#include <stdexcept>

namespace tteps::scheduler {

#if TTEPS_HAS_HTTPLIB

MetricsEndpoint::MetricsEndpoint(const std::string& host, int port)
    : address_(host + ":" + std::to_string(port)), server_(std::make_unique<httplib::Server>()) {
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& response) {
    std::lock_guard<std::mutex> lock(mu_);
    response.set_content(text_, "text/plain; version=0.0.4; charset=utf-8");
  });
  if (!server_->bind_to_port(host, port)) {
    throw std::runtime_error("--metrics_port: cannot listen on " + address_ +
                             " (in use, or not an address of this host)");
  }
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // Until it listens: a stop() before that would be lost, and the join below would wait on a
  // server that never ends (a job that fails right after starting the endpoint).
  for (int i = 0; i < 400 && !server_->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

MetricsEndpoint::~MetricsEndpoint() {
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

#else
}  // namespace tteps::scheduler
namespace httplib {
class Server {};  // never made: the constructor refuses
}  // namespace httplib
namespace tteps::scheduler {

MetricsEndpoint::MetricsEndpoint(const std::string& host, int port)
    : address_(host + ":" + std::to_string(port)) {
  throw std::runtime_error(
      "--metrics_port: this build has no cpp-httplib (Debian's "
      "libcpp-httplib-dev, which launch/install-deps.sh installs)");
}

MetricsEndpoint::~MetricsEndpoint() = default;
#endif

void MetricsEndpoint::Publish(std::string text) {
  std::lock_guard<std::mutex> lock(mu_);
  text_ = std::move(text);
}

}  // namespace tteps::scheduler
