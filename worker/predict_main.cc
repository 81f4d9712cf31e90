// tteps-predict: travel-time estimates of routes from a trained model.pt. Routes are trips before
// they are driven: `time` and `time_gap` may be missing. One JSON line per route.
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include "common/init.h"
#include "common/json_writer.h"
#include "model/data/trip_parser.h"
#include "model/data/trip_store.h"
#include "model/dataset.h"
#include "model/deeptte/checkpoint.h"
#include "model/device.h"
#include "model/evaluator.h"

DEFINE_string(model, "", "model file written by a training run (OUT_DIR/model.pt)");
DEFINE_string(data, "",
              "routes to estimate: JSON lines in the trip format, `time` and `time_gap` optional "
              "(an \"id\" field is echoed), or a trip store (tteps-pack)");
DEFINE_string(out, "", "where to write the estimates (default: standard output)");
DEFINE_string(bad_records, "fail",
              "a malformed record: fail (stop, naming file, line and field) or skip (count it)");
DEFINE_int64(batch_size, 256, "routes per batch");
DEFINE_int32(threads, 1, "LibTorch intra-op threads");
DEFINE_string(device, "cpu", "where to compute: cpu, cuda or cuda:N");

namespace tteps {
namespace {

// Routes of a JSON-lines file, a chunk at a time, with their line numbers and ids.
class RouteReader {
 public:
  RouteReader(const std::string& path, int64_t min_points)
      : path_(path), in_(path), parser_(Limits(min_points)) {
    if (!in_) throw data::DataError("cannot open data file '" + path + "'");
  }
  // Up to `n` valid routes; false at the end of the file.
  bool Next(size_t n, std::vector<data::Trip>* trips, std::vector<size_t>* lines,
            std::vector<std::string>* ids) {
    trips->clear();
    lines->clear();
    ids->clear();
    std::string text, error;
    data::Trip trip;
    while (trips->size() < n && std::getline(in_, text)) {
      ++line_;
      if (!parser_.Parse(text, &trip, &error)) {
        const std::string where = path_ + ":" + std::to_string(line_) + ": " + error;
        if (FLAGS_bad_records != "skip") throw data::DataError(where);
        if (skipped_++ < 10) LOG(WARNING) << "skipped " << where;
        continue;
      }
      trips->push_back(std::move(trip));
      lines->push_back(line_);
      ids->push_back(parser_.id());
    }
    if (in_.bad()) throw data::DataError("error reading '" + path_ + "'");
    return !trips->empty();
  }
  size_t skipped() const { return skipped_; }

 private:
  static data::TripLimits Limits(int64_t min_points) {
    data::TripLimits limits;
    limits.min_points = static_cast<size_t>(min_points);
    limits.routes = true;
    return limits;
  }
  std::string path_;
  std::ifstream in_;
  data::TripParser parser_;
  size_t line_ = 0, skipped_ = 0;
};

std::string EstimateLine(const char* key, size_t where, const std::string& id, float seconds) {
  if (!std::isfinite(seconds)) {
    throw std::runtime_error(std::string("the estimate of ") + key + " " + std::to_string(where) +
                             " is " + std::to_string(seconds) +
                             ": a diverged model, or a route with extreme values");
  }
  JsonObject o;
  o.Add(key, static_cast<uint64_t>(where));
  if (!id.empty()) o.AddRaw("id", id);
  o.Add("estimate_s", static_cast<double>(seconds));
  return o.str() + "\n";
}

// Estimates every route; returns how many.
size_t Run(deeptte::DeepTTEImpl& model, std::ostream& out) {
  const int64_t kChunk = 16 * FLAGS_batch_size;
  if (data::IsTripStore(FLAGS_data)) {  // no lines and no ids: the trip's number in the store
    // Refused if packed for shorter trips than the model's kernel.
    const auto store = OpenTrips({FLAGS_data}, "fail", model.config().kernel_size);
    std::vector<size_t> indices;
    for (size_t start = 0; start < store->size(); start += kChunk) {
      indices.resize(std::min<size_t>(kChunk, store->size() - start));
      for (size_t i = 0; i < indices.size(); ++i) indices[i] = start + i;
      const data::TripSubset chunk(store, indices);
      const std::vector<float> s = Predict(model, chunk, FLAGS_batch_size);
      for (size_t i = 0; i < s.size(); ++i) out << EstimateLine("trip", start + i, "", s[i]);
    }
    return store->size();
  }
  RouteReader reader(FLAGS_data, model.config().kernel_size);
  std::vector<data::Trip> trips;
  std::vector<size_t> lines;
  std::vector<std::string> ids;
  size_t n = 0;
  while (reader.Next(kChunk, &trips, &lines, &ids)) {
    const data::TripVector chunk(std::move(trips));
    const std::vector<float> s = Predict(model, chunk, FLAGS_batch_size);
    for (size_t i = 0; i < s.size(); ++i) out << EstimateLine("line", lines[i], ids[i], s[i]);
    n += s.size();
    trips.clear();
  }
  if (reader.skipped() > 0) {
    std::fprintf(stderr, "tteps-predict: %zu bad record%s skipped (--bad_records skip)\n",
                 reader.skipped(), reader.skipped() == 1 ? "" : "s");
  }
  return n;
}

}  // namespace
}  // namespace tteps

int main(int argc, char** argv) {
  tteps::InitProgram(&argc, &argv,
                     "tteps-predict: travel-time estimates of routes from a trained model.\n"
                     "  tteps-predict --model OUT_DIR/model.pt --data FILE|STORE [--out FILE]\n"
                     "Writes one JSON line per route: {\"line\":N,\"id\":..,\"estimate_s\":..} "
                     "(a store's routes: {\"trip\":I,\"estimate_s\":..}).");
  try {
    if (FLAGS_model.empty() || FLAGS_data.empty()) {
      throw std::invalid_argument("--model and --data are required");
    }
    if (FLAGS_batch_size < 1 || FLAGS_threads < 1) {
      throw std::invalid_argument("--batch_size and --threads must be >= 1");
    }
    if (FLAGS_bad_records != "fail" && FLAGS_bad_records != "skip") {
      throw std::invalid_argument("--bad_records must be fail or skip, not '" + FLAGS_bad_records +
                                  "'");
    }
    torch::set_num_threads(FLAGS_threads);
    const auto device = tteps::ResolveDevice(FLAGS_device, tteps::LocalRank());
    auto model = tteps::deeptte::LoadModel(FLAGS_model, device);
    const auto start = std::chrono::steady_clock::now();
    std::ofstream file;
    if (!FLAGS_out.empty()) {
      file.open(FLAGS_out, std::ios::trunc);
      if (!file) throw std::runtime_error("cannot write " + FLAGS_out);
    }
    std::ostream& out = FLAGS_out.empty() ? std::cout : file;
    const size_t n = tteps::Run(*model, out);
    out.flush();
    if (!out)
      throw std::runtime_error("cannot write " + (FLAGS_out.empty() ? "the estimates" : FLAGS_out));
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "tteps-predict: %zu routes in %.2f s (%.0f routes/s, %d thread%s)\n", n, s,
                 s > 0 ? n / s : 0.0, FLAGS_threads, FLAGS_threads == 1 ? "" : "s");
    if (n == 0) throw std::runtime_error("no route to estimate in " + FLAGS_data);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tteps-predict: %s\n", e.what());
    return 1;
  }
}
