// Allreduce correctness under mpirun (run with 1..5 ranks by CTest): our ring and MPI's, for
// buffer sizes around the rank count, primes, the DeepTTE model and 64 MB, against a plain sum.
// Values are small integers so that every sum is exact in float and results compare with ==.
#include "worker/collectives/allreduce.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "worker/collectives/comm_thread.h"
#include "worker/collectives/identity_check.h"
#include "worker/collectives/tcp_ring.h"

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

TEST(Allreduce, RingOnTheCommunicationThreadMatchesAPlainSum) {
  // As the ring worker runs it: buckets submitted in order, reduced on one thread.
  auto ring = MakeRingAllreduce(MPI_COMM_WORLD);
  std::vector<float> data(100003), expected(data.size(), 0.0f);
  for (size_t i = 0; i < data.size(); ++i) {
    data[i] = Value(i, Rank());
    for (int r = 0; r < Size(); ++r) expected[i] += Value(i, r);
  }
  CommThread comm;
  for (size_t begin = 0; begin < data.size(); begin += 30000) {
    const size_t n = std::min<size_t>(30000, data.size() - begin);
    comm.Submit([&, begin, n] { ring->Sum(data.data() + begin, n, 60); });
  }
  comm.Drain(120);
  EXPECT_TRUE(data == expected);
  EXPECT_GT(comm.TakeBusySeconds(), 0.0);
}

TEST(Consistency, HashesAreGatheredAndADifferentRankIsNamed) {
  auto ring = MakeRingAllreduce(MPI_COMM_WORLD);
  std::vector<float> params(1000);
  for (size_t i = 0; i < params.size(); ++i) params[i] = 0.001f * i;
  // Identical everywhere.
  auto hashes = GatherHashes(*ring, Rank(), Size(), BitHash(params.data(), params.size()), 60);
  ASSERT_EQ(hashes.size(), static_cast<size_t>(Size()));
  EXPECT_TRUE(Disagreeing(hashes).empty());
  EXPECT_EQ(hashes[Rank()], BitHash(params.data(), params.size()));
  // The last rank flips one bit of one parameter.
  if (Size() > 1 && Rank() == Size() - 1) {
    uint32_t bits;
    std::memcpy(&bits, &params[500], 4);
    bits ^= 1;
    std::memcpy(&params[500], &bits, 4);
  }
  hashes = GatherHashes(*ring, Rank(), Size(), BitHash(params.data(), params.size()), 60);
  if (Size() > 1) {
    EXPECT_EQ(Disagreeing(hashes), std::vector<int>{Size() - 1});
  } else {
    EXPECT_TRUE(Disagreeing(hashes).empty());
  }
}

TEST(Allreduce, AStalledRankIsNamedWithinTheTimeout) {
  if (Size() < 2) GTEST_SKIP() << "needs a ring of at least 2 ranks";
  // On a communicator of its own, so that the stalled round leaves nothing behind for others.
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  const int stalled = Size() - 1;
  {
    auto ring = MakeRingAllreduce(comm);
    std::vector<float> data(4096, 1.0f);
    if (Rank() != stalled) {
      const auto start = std::chrono::steady_clock::now();
      try {
        ring->Sum(data.data(), data.size(), /*timeout_s=*/1.0);
        ADD_FAILURE() << "rank " << Rank() << ": the sum completed without rank " << stalled;
      } catch (const CollectiveTimeout& e) {
        const double took =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        EXPECT_LT(took, 5.0);
        // Rank 0's left neighbour is the stalled rank: nothing arrives from it.
        if (Rank() == 0) {
          EXPECT_EQ(e.peer(), stalled) << e.what();
          EXPECT_NE(std::string(e.what()).find("worker " + std::to_string(stalled)),
                    std::string::npos)
              << e.what();
        } else {
          EXPECT_GE(e.peer(), 0) << e.what();
        }
      }
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(Allreduce, AnAbortCheckEndsTheWaitAtOnce) {
  if (Size() < 2) GTEST_SKIP() << "needs a ring of at least 2 ranks";
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  if (Rank() == 0) {
    auto ring = MakeRingAllreduce(comm);
    ring->set_abort_check([] { return true; });
    std::vector<float> data(4096, 1.0f);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_THROW(ring->Sum(data.data(), data.size(), /*timeout_s=*/60), CollectiveAborted);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// Every rank's TCP ring endpoint, gathered over MPI (the cluster map's job in a real run).
std::vector<std::string> RingEndpoints(const TcpRing& ring) {
  constexpr int kLen = 64;
  char mine[kLen] = {};
  std::snprintf(mine, kLen, "%s", ring.endpoint().c_str());
  std::vector<char> all(static_cast<size_t>(kLen) * Size());
  MPI_Allgather(mine, kLen, MPI_CHAR, all.data(), kLen, MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (int r = 0; r < Size(); ++r) out.emplace_back(&all[static_cast<size_t>(r) * kLen]);
  return out;
}

// The ring over TCP links sums as over MPI's. Then the last rank is "lost": it leaves a
// message of the old ring behind and stops; the others rebuild without it (generation 1),
// drop the stale message and sum correctly among themselves, with the failed ring's posts
// abandoned.
TEST(Allreduce, TcpRingMatchesAPlainSumAndIsRebuiltWithoutALostRank) {
  zmq::context_t ctx;
  TcpRing tcp(ctx, "127.0.0.1", "");
  const std::vector<std::string> endpoints = RingEndpoints(tcp);
  RingMembers all;
  for (int r = 0; r < Size(); ++r) {
    all.ids.push_back(r);
    all.endpoints.push_back(endpoints[r]);
  }
  {
    auto ring = MakeRingAllreduce(tcp.Links(all, Rank()));
    for (size_t n : Sizes()) CheckSum(*ring, n);
  }
  if (Size() < 3) return;
  const int lost = Size() - 1;
  MPI_Barrier(MPI_COMM_WORLD);
  if (Rank() == lost) {
    // Part of a round of the old ring: rank 0 (its right neighbour) must drop it.
    auto links = tcp.Links(RingMembers{1, all.ids, all.endpoints}, Rank());
    std::vector<float> junk(1000, 99.0f);
    links->PostSend(junk.data(), junk.size());
    links->EndRound(false);
  } else {
    RingMembers survivors;
    survivors.generation = 2;
    for (int r = 0; r < lost; ++r) {
      survivors.ids.push_back(r);
      survivors.endpoints.push_back(endpoints[r]);
    }
    auto ring = MakeRingAllreduce(tcp.Links(survivors, Rank()));
    std::vector<float> data(7919), expected(data.size(), 0.0f);
    for (size_t i = 0; i < data.size(); ++i) {
      data[i] = Value(i, Rank());
      for (int r = 0; r < lost; ++r) expected[i] += Value(i, r);
    }
    ring->Sum(data.data(), data.size(), 60);
    EXPECT_TRUE(data == expected);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// A ring waiting for a lost worker gives up at once when told the membership changed.
TEST(Allreduce, AMembershipChangeEndsTheWaitWithItsOwnError) {
  if (Size() < 2) GTEST_SKIP() << "needs a ring of at least 2 ranks";
  zmq::context_t ctx;
  TcpRing tcp(ctx, "127.0.0.1", "");
  const std::vector<std::string> endpoints = RingEndpoints(tcp);
  if (Rank() == 0) {
    RingMembers all;
    for (int r = 0; r < Size(); ++r) {
      all.ids.push_back(r);
      all.endpoints.push_back(endpoints[r]);
    }
    auto ring = MakeRingAllreduce(tcp.Links(all, 0));
    ring->set_membership_check([] { return true; });
    std::vector<float> data(1000, 1.0f);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_THROW(ring->Sum(data.data(), data.size(), 30), MembershipChanged);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(Allreduce, UnknownKindIsRefused) {
  EXPECT_THROW(MakeAllreduce("tree", MPI_COMM_WORLD), std::invalid_argument);
}

}  // namespace
}  // namespace tteps::collectives

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
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
