#include "model/deeptte/checkpoint.h"

#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "common/atomic_file.h"
#include "common/file_formats.h"

namespace tteps::deeptte {
namespace {

// model.pt's "format" key: this prefix and the format version (common/file_formats.h).
constexpr const char* kFormatPrefix = "tteps.deeptte.v";

// NormStats fields by name, so saving and loading walk the same list.
template <typename Stats, typename F>
void ForEachStat(Stats& s, F&& f) {
  f("dist_mean", s.dist_mean), f("dist_std", s.dist_std), f("time_mean", s.time_mean),
      f("time_std", s.time_std), f("lngs_mean", s.lngs_mean), f("lngs_std", s.lngs_std),
      f("lats_mean", s.lats_mean), f("lats_std", s.lats_std), f("time_gap_mean", s.time_gap_mean),
      f("time_gap_std", s.time_gap_std), f("dist_gap_mean", s.dist_gap_mean),
      f("dist_gap_std", s.dist_gap_std);
}

// Refuses a file of another format version by name: a newer tteps's model, or an older one's.
void CheckFormat(torch::serialize::InputArchive& archive, const std::string& path) {
  const std::string want = kFormatPrefix + std::to_string(kModelFileFormat);
  c10::IValue v;
  if (!archive.try_read("format", v) || !v.isString() ||
      v.toStringRef().rfind(kFormatPrefix, 0) != 0) {
    throw std::runtime_error(path + " is not a tteps model (" + want + ")");
  }
  const std::string& format = v.toStringRef();
  if (format == want) return;
  const std::string version = format.substr(std::string(kFormatPrefix).size());
  throw std::runtime_error(path + " is a tteps model of format version " + version + " (" + format +
                           "); this tteps reads version " + std::to_string(kModelFileFormat) +
                           " (docs/compatibility.md)");
}

}  // namespace

void SaveModel(DeepTTE& model, const std::string& path) {
  SaveModelAsFormat(model, path, kModelFileFormat);
}

void SaveModelAsFormat(DeepTTE& model, const std::string& path, uint32_t format) {
  torch::serialize::OutputArchive archive;
  archive.write("format", c10::IValue(kFormatPrefix + std::to_string(format)));
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
  CheckFormat(archive, path);
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
