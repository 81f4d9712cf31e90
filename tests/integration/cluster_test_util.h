// Helpers for integration tests that run real jobs: launch/tteps (mpirun), the programs, and
// reading what they wrote.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "worker/deeptte/checkpoint.h"
#include "worker/model_params.h"

namespace tteps::testing_util {

inline std::string Bin() { return TTEPS_BINARY_DIR "/bin"; }
inline std::string Launcher() { return std::string(TTEPS_SOURCE_DIR) + "/launch/tteps"; }

inline std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/tteps_it_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs a shell command with a hard time limit; returns its exit status (124 on timeout).
inline int RunCommand(const std::string& cmd, int limit_s, const std::string& log) {
  const std::string full = "TTEPS_BIN=" + Bin() + " timeout -k 5 " + std::to_string(limit_s) + " " +
                           cmd + " >" + log + " 2>&1";
  const int rc = std::system(full.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

// Largest |a - b| over all parameters of two saved models.
inline double MaxAbsDiff(const std::string& model_a, const std::string& model_b) {
  auto a = deeptte::LoadModel(model_a);
  auto b = deeptte::LoadModel(model_b);
  const auto layout = LayoutOf(*a);
  std::vector<float> fa(layout.total()), fb(layout.total());
  CopyParamsOut(*a, layout, fa.data());
  CopyParamsOut(*b, layout, fb.data());
  double max = 0;
  for (size_t i = 0; i < fa.size(); ++i) max = std::max(max, double(std::abs(fa[i] - fb[i])));
  return max;
}

// The number after "key": in a JSON text (first occurrence); NaN if absent.
inline double JsonNumber(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return std::nan("");
  return std::strtod(json.c_str() + at + key.size() + 3, nullptr);
}

}  // namespace tteps::testing_util
