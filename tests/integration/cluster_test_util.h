// Helpers for integration tests that run real jobs: launch/tteps (mpirun), the programs, and
// reading what they wrote.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "tests/integration/model_diff.h"

namespace tteps::testing_util {

inline std::string Bin() { return TTEPS_BINARY_DIR "/bin"; }
inline std::string Launcher() { return std::string(TTEPS_SOURCE_DIR) + "/launch/tteps"; }

inline std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/tteps_it_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// A free loopback endpoint for a scheduler started by hand: an ephemeral port bound and released.
inline std::string FreeLoopbackEndpoint() {
  zmq::context_t ctx;
  zmq::socket_t probe(ctx, zmq::socket_type::rep);
  probe.bind("tcp://127.0.0.1:*");
  return probe.get(zmq::sockopt::last_endpoint);
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every process's log of a job (launch/tteps writes them to OUT_DIR/logs), one after another.
inline std::string JobLogs(const std::string& out_dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(out_dir + "/logs")) {
    files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  std::string all;
  for (const auto& f : files) all += ReadFile(f);
  return all;
}

// Runs a shell command with a hard time limit; returns its exit status (124 on timeout).
inline int RunCommand(const std::string& cmd, int limit_s, const std::string& log) {
  const std::string full = "TTEPS_BIN=" + Bin() + " timeout -k 5 " + std::to_string(limit_s) + " " +
                           cmd + " >" + log + " 2>&1";
  const int rc = std::system(full.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

// The number after "key": in a JSON text (first occurrence); NaN if absent.
inline double JsonNumber(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return std::nan("");
  return std::strtod(json.c_str() + at + key.size() + 3, nullptr);
}

// A launch/tteps job running in the background, in its own process group.
class BackgroundJob {
 public:
  BackgroundJob(const std::string& launch, const std::string& out_dir, const std::string& log)
      : out_dir_(out_dir), log_(log) {
    const std::string cmd = "TTEPS_BIN=" + Bin() + " " + launch + " >" + log + " 2>&1";
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      execl("/bin/bash", "bash", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~BackgroundJob() {
    if (!ended_) Wait(0);
  }
  // Waits up to `limit_s` for the workers' first train report; returns the scheduler's log.
  bool WaitForTraining(int limit_s) const { return WaitForTrainReports(1, limit_s); }
  // Until metrics.jsonl holds a train report of each of workers 0 .. workers - 1.
  bool WaitForTrainReports(int workers, int limit_s) const {
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < std::chrono::seconds(limit_s)) {
      const std::string metrics = ReadFile(out_dir_ + "/metrics.jsonl");
      int reported = 0;
      for (int w = 0; w < workers; ++w) {
        reported += metrics.find("{\"type\":\"train\",\"worker\":" + std::to_string(w) + ",") !=
                    std::string::npos;
      }
      if (reported == workers) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  }
  // Waits up to `limit_s` for the job to end; kills its process group after that. Returns
  // whether it ended by itself.
  bool Wait(int limit_s) {
    const auto start = std::chrono::steady_clock::now();
    ended_ = true;
    while (waitpid(pid_, &status_, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() - start > std::chrono::seconds(limit_s)) {
        kill(-pid_, SIGKILL);
        waitpid(pid_, &status_, 0);
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return true;
  }
  int status() const { return status_; }
  std::string log() const { return ReadFile(log_); }
  // The launcher's pid where `launch` began with exec (else the shell's).
  pid_t pid() const { return pid_; }

 private:
  std::string out_dir_, log_;
  pid_t pid_ = -1;
  int status_ = 0;
  bool ended_ = false;
};

// What happened to a job after one of its workers was killed.
struct KillOutcome {
  bool killed = false;  // a worker was found and killed
  bool ended = false;   // the job ended within its limit (else it was killed too)
  int status = 0;       // waitpid status of the launcher
  double took_s = 0;    // from the kill to the job's end
  std::string log;
};

// The pid of `role` ("worker", "server") `id` of the job writing to `out_dir`, from the
// scheduler's registration line in its log; -1 if it is not there (yet).
inline pid_t NodePid(const std::string& out_dir, const std::string& role, int id) {
  const std::regex registered("registered " + role + " " + std::to_string(id) +
                              R"( \(rank \d+, host [^,]+, pid (\d+)\))");
  const std::string text = ReadFile(out_dir + "/logs/scheduler-0.log");
  std::smatch m;
  return std::regex_search(text, m, registered) ? static_cast<pid_t>(std::stoi(m[1])) : -1;
}
// The scheduler's address as its log gives it (for a worker that joins by hand).
inline std::string SchedulerEndpoint(const std::string& out_dir) {
  const std::regex at(R"(scheduler at (tcp://[^ \n]+))");
  const std::string text = ReadFile(out_dir + "/logs/scheduler-0.log");
  std::smatch m;
  return std::regex_search(text, m, at) ? std::string(m[1]) : std::string();
}

inline pid_t WorkerPid(const std::string& out_dir, int worker) {
  return NodePid(out_dir, "worker", worker);
}

// Starts `launch` (a launch/tteps command line, output to `log`), waits until training runs,
// SIGKILLs worker `worker` (its pid from the scheduler's registration line in its log) and
// waits up to `limit_s` for the job to end.
// This host's first IPv4 address that is not a loopback one ("" if none).
inline std::string NonLoopbackAddress() {
  ifaddrs* all = nullptr;
  std::string found;
  if (getifaddrs(&all) != 0) return found;
  for (ifaddrs* i = all; i && found.empty(); i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN] = {0};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, text, sizeof(text));
    if (std::string(text).rfind("127.", 0) != 0) found = text;
  }
  freeifaddrs(all);
  return found;
}

// A TCP port of 127.0.0.1 free at the moment (bound to 0, then closed).
inline int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

// The body of an HTTP/1.0 GET of HOST:port/path, HOST an IPv4 address (127.0.0.1 unless given;
// "" where nothing answers).
inline std::string HttpGet(int port, const std::string& path,
                           const std::string& host = "127.0.0.1") {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, host.c_str(), &a.sin_addr);
  std::string reply;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
    const std::string request = "GET " + path + " HTTP/1.0\r\nHost: " + host + "\r\n\r\n";
    if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buf[4096];
      for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) reply.append(buf, n);
    }
  }
  close(fd);
  const auto body = reply.find("\r\n\r\n");
  return body == std::string::npos ? "" : reply.substr(body + 4);
}

// Waits up to `limit_s` for `text` in `file`.
inline bool WaitForText(const std::string& file, const std::string& text, int limit_s) {
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(limit_s)) {
    if (ReadFile(file).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

inline KillOutcome KillWorkerDuringTraining(const std::string& launch, const std::string& out_dir,
                                            const std::string& log, int worker, int limit_s) {
  KillOutcome k;
  BackgroundJob job(launch, out_dir, log);
  const pid_t pid = job.WaitForTraining(120) ? WorkerPid(out_dir, worker) : -1;
  if (pid > 0) k.killed = kill(pid, SIGKILL) == 0;
  const auto killed = std::chrono::steady_clock::now();
  k.ended = k.killed && job.Wait(limit_s);
  if (!k.killed) job.Wait(0);
  k.status = job.status();
  k.took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  k.log = job.log();
  return k;
}

// Pids of the tteps programs (by their process name, e.g. "tteps-scheduler"; empty: all) whose
// command line mentions `marker`.
inline std::vector<pid_t> ProgramPids(const std::string& program, const std::string& marker) {
  std::vector<pid_t> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string pid = e.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string comm = ReadFile("/proc/" + pid + "/comm");
    if (!comm.empty() && comm.back() == '\n') comm.pop_back();
    if (comm.rfind("tteps-", 0) != 0 || (!program.empty() && comm != program.substr(0, 15))) {
      continue;
    }
    if (ReadFile("/proc/" + pid + "/cmdline").find(marker) == std::string::npos) continue;
    out.push_back(static_cast<pid_t>(std::stoi(pid)));
  }
  return out;
}

// The TCP addresses (as "a.b.c.d:port" or "[v6]:port") that the tteps programs whose command
// line mentions `marker` listen on, read from /proc (no ss needed).
inline std::vector<std::string> ListeningAddresses(const std::string& marker) {
  std::set<std::string> inodes;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string pid = e.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (ReadFile("/proc/" + pid + "/comm").rfind("tteps-", 0) != 0) continue;
    if (ReadFile("/proc/" + pid + "/cmdline").find(marker) == std::string::npos) continue;
    std::error_code ec;
    for (const auto& fd : std::filesystem::directory_iterator("/proc/" + pid + "/fd", ec)) {
      const std::string target = std::filesystem::read_symlink(fd.path(), ec).string();
      if (target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
    }
  }
  std::vector<std::string> out;
  for (const std::string table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::istringstream in(ReadFile(table));
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string slot, local, remote, state, queues, timer, retr, uid, timeout, inode;
      f >> slot >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode;
      if (state != "0A" || !inodes.count(inode)) continue;  // 0A: LISTEN
      const std::string hex = local.substr(0, local.find(':'));
      const int port = std::stoi(local.substr(local.find(':') + 1), nullptr, 16);
      std::string addr;
      if (hex.size() == 8) {  // IPv4, little-endian
        for (int i = 3; i >= 0; --i) {
          addr += std::to_string(std::stoi(hex.substr(2 * i, 2), nullptr, 16)) + (i ? "." : "");
        }
      } else {
        addr = "[" + hex + "]";
      }
      out.push_back(addr + ":" + std::to_string(port));
    }
  }
  return out;
}

// Two models trained with Adam that should be the same up to float rounding: sync or ring
// against local training (a batch's gradient summed in two halves instead of at once). Adam's
// 1/sqrt(v) magnifies those roundings where a gradient is near zero (an embedding row a few
// trips touch moves by +-lr whatever the gradient's size, so its sign is what counts), and
// which elements they hit depends on the CPU and kernels. Measured over 20 steps at lr 1e-3:
// the largest difference 8e-7 to 1.2e-4 (AVX2 and AVX-512 kernels, two CPU models), 0.41 % of
// the 711k elements over 1e-5 at most; a run with a 1 % lower lr moved 45 % of them by more.
// So: at most 2 % of the elements more than 1e-5 apart, and none by 2 lr.
inline void ExpectAdamRunsAgree(const std::string& model_a, const std::string& model_b, double lr) {
  const ModelDiff d = DiffModels(model_a, model_b, 1e-5);
  std::printf("Adam runs: max |diff| %g at %s; %ld of %ld elements over 1e-5\n", d.max,
              d.max_at.c_str(), static_cast<long>(d.above), static_cast<long>(d.elements));
  EXPECT_GT(d.elements, 0);
  EXPECT_LT(d.max, 2 * lr) << d.max_at;
  EXPECT_LE(d.above, d.elements / 50);
}

// Counts occurrences of `needle` in `text`.
inline size_t CountOf(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = 0; (at = text.find(needle, at)) != std::string::npos; at += needle.size()) ++n;
  return n;
}

// A job far longer than its time budget (--max_train_s 4, evaluations every second), with a
// timeline (--trace). Checks that it stopped early and cleanly, that the timeline holds one
// compute span per step of every worker, and returns the steps each worker reported finishing.
inline std::vector<int> RunOutOfTime(const std::string& name, const std::string& launch_flags,
                                     const std::string& train_flags = "") {
  const std::string dir = FreshDir(name);
  const std::string cmd =
      Launcher() + " " + launch_flags + " --out_dir " + dir + "/run -- --train_data " +
      TTEPS_SOURCE_DIR + "/data/chengdu/trajectories.jsonl --epochs 200 --log_every 1 " +
      "--max_train_s 4 --eval_every_s 1 --trace " + dir + "/trace.json " + train_flags;
  EXPECT_EQ(RunCommand(cmd, 120, dir + "/log"), 0) << ReadFile(dir + "/log");
  const std::string log = JobLogs(dir + "/run");
  const std::string summary = ReadFile(dir + "/run/summary.json");
  std::printf("%s: %s\n", name.c_str(), summary.c_str());
  EXPECT_NE(summary.find("\"stopped_by_time_budget\":true"), std::string::npos) << summary;
  EXPECT_LT(JsonNumber(summary, "steps"), JsonNumber(summary, "planned_steps")) << summary;
  EXPECT_LT(JsonNumber(summary, "train_seconds"), 30) << summary;
  EXPECT_GT(JsonNumber(summary, "mape"), 0) << summary;  // the final evaluation is in
  // Evaluations about every second of the budget, plus the final one.
  EXPECT_GE(CountOf(ReadFile(dir + "/run/metrics.jsonl"), "\"type\":\"eval\""), 3u);
  std::vector<int> steps;
  const std::regex finished(R"(worker (\d+) \(rank[^)]*\) finished its (\d+) steps)");
  for (std::sregex_iterator it(log.begin(), log.end(), finished), end; it != end; ++it) {
    const int w = std::stoi((*it)[1]);
    if (static_cast<int>(steps.size()) <= w) steps.resize(w + 1, -1);
    steps[w] = std::stoi((*it)[2]);
  }
  const std::string trace = ReadFile(dir + "/trace.json");
  EXPECT_EQ(trace.rfind("{\"displayTimeUnit\"", 0), 0u) << trace.substr(0, 200);
  EXPECT_EQ(trace.substr(trace.size() - 3), "]}\n");
  int total = 0;
  for (size_t w = 0; w < steps.size(); ++w) {
    total += steps[w];
    EXPECT_NE(trace.find("\"args\":{\"name\":\"worker " + std::to_string(w)), std::string::npos);
  }
  EXPECT_EQ(CountOf(trace, "{\"name\":\"compute\",\"ph\":\"X\""), static_cast<size_t>(total));
  return steps;
}

}  // namespace tteps::testing_util
