// Allreduce correctness under mpirun (run with 1..5 ranks by CTest): our ring and MPI's, for
// buffer sizes around the rank count, primes, the DeepTTE model and 64 MB, against a plain sum.
// Values are small integers so that every sum is exact in float and results compare with ==.
#include "worker/collectives/allreduce.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <vector>

namespace tteps::collectives {
namespace {

int Rank() {
  int r;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int Size() {
  int s;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

float Value(size_t i, int rank) { return static_cast<float>((i * 7 + rank * 13) % 17) - 8.0f; }

uint64_t Hash(const std::vector<float>& v) {
  uint64_t h = 14695981039346656037ull;
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());
  for (size_t i = 0; i < v.size() * sizeof(float); ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

void CheckSum(Allreduce& algo, size_t n) {
  std::vector<float> data(n), expected(n, 0.0f);
  for (size_t i = 0; i < n; ++i) {
    data[i] = Value(i, Rank());
    for (int r = 0; r < Size(); ++r) expected[i] += Value(i, r);
  }
  algo.Sum(data.data(), n, /*timeout_s=*/60);
  EXPECT_TRUE(data == expected) << algo.name() << " n=" << n << " ranks=" << Size();
  // Every rank holds the same bits.
  const uint64_t h = Hash(data);
  uint64_t lo = 0, hi = 0;
  MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(lo, hi) << algo.name() << " n=" << n << ": ranks disagree";
}

std::vector<size_t> Sizes() {
  const size_t n = Size();
  std::vector<size_t> sizes = {1, n + 1, 7919, 710923, size_t{16} << 20};
  if (n > 1) sizes.push_back(n - 1);
  return sizes;
}

TEST(Allreduce, RingMatchesAPlainSum) {
  auto ring = MakeRingAllreduce(MPI_COMM_WORLD);
  for (size_t n : Sizes()) CheckSum(*ring, n);
}

TEST(Allreduce, RingWithSmallSegmentsMatchesAPlainSum) {
  // 4 KB segments: many per chunk, so sends, receives and reductions interleave.
  auto ring = MakeRingAllreduce(MPI_COMM_WORLD, 4096);
  for (size_t n : {size_t{7919}, size_t{710923}}) CheckSum(*ring, n);
}

TEST(Allreduce, MpiMatchesAPlainSum) {
  auto mpi = MakeMpiAllreduce(MPI_COMM_WORLD);
  for (size_t n : Sizes()) CheckSum(*mpi, n);
}

TEST(Allreduce, UnknownKindIsRefused) {
  EXPECT_THROW(MakeAllreduce("tree", MPI_COMM_WORLD), std::invalid_argument);
}

}  // namespace
}  // namespace tteps::collectives

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  // Only rank 0 prints; every rank runs every test, and the exit status is the worst of all.
  if (tteps::collectives::Rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS() != 0, any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}
