#include "model/deeptte/cpu_isa.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

namespace tteps::deeptte {

const char* CpuIsaName(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAvx512:
      return "avx512";
    case CpuIsa::kAvx2:
      return "avx2";
    case CpuIsa::kGeneric:
      break;
  }
  return "generic";
}

CpuIsa CpuIsaOfThisCpu() {
#if defined(__x86_64__) || defined(__i386__)
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx2 && __builtin_cpu_supports("avx512f")) return CpuIsa::kAvx512;
  if (avx2) return CpuIsa::kAvx2;
#endif
  return CpuIsa::kGeneric;
}

CpuIsa ParseCpuIsa(const std::string& name) {
  for (CpuIsa isa : {CpuIsa::kGeneric, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    if (name == CpuIsaName(isa)) return isa;
  }
  throw std::invalid_argument("TTEPS_MAX_CPU_ISA=" + name +
                              ": expected avx512, avx2 or generic (or leave it unset)");
}

CpuIsa ActiveCpuIsa() {
  static const CpuIsa active = [] {
    const char* cap = std::getenv("TTEPS_MAX_CPU_ISA");
    const CpuIsa here = CpuIsaOfThisCpu();
    return cap && *cap ? std::min(here, ParseCpuIsa(cap)) : here;
  }();
  return active;
}

}  // namespace tteps::deeptte
