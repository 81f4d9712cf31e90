// Which instruction set tteps' own CPU kernels (gemm.h, lstm_math.h) run: the widest this CPU
// has, capped by the environment variable TTEPS_MAX_CPU_ISA (avx512, avx2 or generic), as
// oneDNN's ONEDNN_MAX_CPU_ISA caps its kernels. The cap lets one machine measure and test the
// narrower paths; it never raises the set beyond what the CPU has. Chosen once per process.
#pragma once

#include <string>

namespace tteps::deeptte {

// Narrowest first: the order is the comparison.
enum class CpuIsa { kGeneric = 0, kAvx2 = 1, kAvx512 = 2 };

// "generic", "avx2" or "avx512".
const char* CpuIsaName(CpuIsa isa);

// The widest set this CPU runs (AVX2 counts with FMA only; AVX-512 means AVX-512F with FMA).
CpuIsa CpuIsaOfThisCpu();

// The set the kernels use: CpuIsaOfThisCpu() capped by TTEPS_MAX_CPU_ISA. Throws
// std::invalid_argument naming the variable when it holds anything else.
CpuIsa ActiveCpuIsa();

// Parses a cap ("avx512", "avx2", "generic"); throws std::invalid_argument otherwise.
CpuIsa ParseCpuIsa(const std::string& name);

}  // namespace tteps::deeptte
