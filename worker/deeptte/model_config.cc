#include "worker/deeptte/model_config.h"

#include <sstream>
#include <stdexcept>

namespace tteps::deeptte {

void ModelConfig::Validate() const {
  auto fail = [](const std::string& what) { throw std::invalid_argument("model config: " + what); };
  if (kernel_size < 2) fail("kernel_size must be >= 2");
  if (num_filter < 1) fail("num_filter must be >= 1");
  if (pooling != "attention" && pooling != "mean") fail("pooling must be attention or mean");
  if (!(alpha >= 0.0 && alpha <= 1.0)) fail("alpha must be in [0, 1]");
  if (num_final_fcs < 0) fail("num_final_fcs must be >= 0");
  if (final_fc_size < 1) fail("final_fc_size must be >= 1");
}

std::string ModelConfig::ToString() const {
  std::ostringstream os;
  os << "kernel_size=" << kernel_size << " num_filter=" << num_filter << " pooling=" << pooling
     << " alpha=" << alpha << " num_final_fcs=" << num_final_fcs
     << " final_fc_size=" << final_fc_size;
  return os.str();
}

}  // namespace tteps::deeptte
