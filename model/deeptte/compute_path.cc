#include "model/deeptte/compute_path.h"

#include <dlfcn.h>

#include <sstream>

#include "model/deeptte/cpu_isa.h"

namespace tteps::deeptte {

std::string GemmName() { return std::string("tteps ") + CpuIsaName(ActiveCpuIsa()); }

std::string BlasName() {
  // Looked up at run time: the BLAS is whichever libblas.so.3 the system's alternatives chose.
  using Text = char* (*)();
  const auto config = reinterpret_cast<Text>(dlsym(RTLD_DEFAULT, "openblas_get_config"));
  const auto core = reinterpret_cast<Text>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  if (!config || !core) return "unknown";
  std::istringstream words(config());  // "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..."
  std::string name, version;
  words >> name >> version;
  return name + " " + version + " " + core();
}

}  // namespace tteps::deeptte
