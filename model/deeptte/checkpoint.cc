#include "model/deeptte/checkpoint.h"

#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "common/atomic_file.h"

namespace tteps::deeptte {
namespace {

constexpr const char* kFormat = "tteps.deeptte.v1";

// NormStats fields by name, so saving and loading walk the same list.
template <typename Stats, typename F>
void ForEachStat(Stats& s, F&& f) {
  f("dist_mean", s.dist_mean), f("dist_std", s.dist_std), f("time_mean", s.time_mean),
      f("time_std", s.time_std), f("lngs_mean", s.lngs_mean), f("lngs_std", s.lngs_std),
      f("lats_mean", s.lats_mean), f("lats_std", s.lats_std), f("time_gap_mean", s.time_gap_mean),
      f("time_gap_std", s.time_gap_std), f("dist_gap_mean", s.dist_gap_mean),
      f("dist_gap_std", s.dist_gap_std);
}

}  // namespace

void SaveModel(DeepTTE& model, const std::string& path) {
  torch::serialize::OutputArchive archive;
  archive.write("format", c10::IValue(std::string(kFormat)));
  const ModelConfig& c = model->config();
  archive.write("config.kernel_size", c10::IValue(c.kernel_size));
  archive.write("config.num_filter", c10::IValue(c.num_filter));
  archive.write("config.pooling", c10::IValue(c.pooling));
  archive.write("config.alpha", c10::IValue(c.local_loss_weight));  // the paper's name
  archive.write("config.num_final_fcs", c10::IValue(c.num_final_fcs));
  archive.write("config.final_fc_size", c10::IValue(c.final_fc_size));
  ForEachStat(model->stats(), [&](const char* name, double v) {
    archive.write(std::string("stats.") + name, c10::IValue(v));
  });
  torch::serialize::OutputArchive weights;
  model->save(weights);
  archive.write("weights", weights);

  // Serialized in memory, then written whole (common/atomic_file.h): a full disk is named, and
  // the previous file stays.
  std::ostringstream bytes;
  archive.save_to(bytes);
  WriteFileAtomically(path, bytes.str());
}

DeepTTE LoadModel(const std::string& path, torch::Device device) {
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path, torch::Device(torch::kCPU));
  } catch (const c10::Error& e) {
    throw std::runtime_error("cannot read model file " + path + ": " + e.what_without_backtrace());
  }
  c10::IValue v;
  if (!archive.try_read("format", v) || !v.isString() || v.toStringRef() != kFormat) {
    throw std::runtime_error(path + " is not a tteps model (" + kFormat + ")");
  }
  auto read = [&](const std::string& key) {
    c10::IValue value;
    if (!archive.try_read(key, value)) throw std::runtime_error(path + ": missing " + key);
    return value;
  };
  ModelConfig c;
  c.kernel_size = read("config.kernel_size").toInt();
  c.num_filter = read("config.num_filter").toInt();
  c.pooling = read("config.pooling").toStringRef();
  c.local_loss_weight = read("config.alpha").toDouble();
  c.num_final_fcs = read("config.num_final_fcs").toInt();
  c.final_fc_size = read("config.final_fc_size").toInt();
  data::NormStats stats;
  ForEachStat(stats, [&](const char* name, double& v) {
    v = read(std::string("stats.") + name).toDouble();
  });
  DeepTTE model(c, stats);
  torch::serialize::InputArchive weights;
  if (!archive.try_read("weights", weights)) throw std::runtime_error(path + ": missing weights");
  model->load(weights);
  model->to(device);
  return model;
}

}  // namespace tteps::deeptte
