// Guarded mappings: a read past the end of a file cut short under its mapping returns zeros
// instead of killing the process with SIGBUS, and the reader's check names the file and how it
// shrank. An unguarded read of the same kind still dies of the signal.
#include "model/data/mapped_reads.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <csignal>
#include <string>
#include <vector>

#include "model/data/data_error.h"

namespace tteps::data {
namespace {

constexpr size_t kBytes = 3 * 65536;  // whole pages on any page size up to 64 KiB

// A file of kBytes bytes of 7s, mapped read-only.
const char* MapFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  EXPECT_GE(fd, 0);
  const std::vector<char> sevens(kBytes, 7);
  EXPECT_EQ(::write(fd, sevens.data(), sevens.size()), static_cast<ssize_t>(kBytes));
  void* p = mmap(nullptr, kBytes, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  EXPECT_NE(p, MAP_FAILED);
  return static_cast<const char*>(p);
}

std::string ErrorOfCheck() {
  try {
    ThrowIfMappedReadFailed();
  } catch (const DataError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(MappedReads, AFileCutShortReadsAsZerosAndIsNamedByTheCheck) {
  const std::string path = testing::TempDir() + "tteps_mapped_reads.bin";
  const char* map = MapFile(path);
  const int guard = GuardMapping(map, kBytes, path);
  EXPECT_EQ(map[kBytes - 1], 7);
  EXPECT_EQ(ErrorOfCheck(), "(no error)");
  ASSERT_EQ(::truncate(path.c_str(), 1000), 0);
  const volatile char* past_end = map + kBytes - 1;
  EXPECT_EQ(*past_end, 0);  // SIGBUS without the guard
  const std::string err = ErrorOfCheck();
  EXPECT_NE(err.find(path + ": a read of it failed under the running job: it shrank from " +
                     std::to_string(kBytes) + " to 1000 bytes"),
            std::string::npos)
      << err;
  UnguardMapping(guard);
  EXPECT_EQ(ErrorOfCheck(), "(no error)");  // the mapping and its failure are gone
  munmap(const_cast<char*>(map), kBytes);
}

TEST(MappedReadsDeathTest, AnUnguardedReadPastTheEndStillDiesOfSigbus) {
  const std::string path = testing::TempDir() + "tteps_mapped_reads_unguarded.bin";
  const std::string guarded_path = testing::TempDir() + "tteps_mapped_reads_guarded.bin";
  const char* guarded = MapFile(guarded_path);
  const int guard = GuardMapping(guarded, kBytes, guarded_path);  // the handler is installed
  const char* map = MapFile(path);
  ASSERT_EQ(::truncate(path.c_str(), 0), 0);
  const volatile char* past_end = map + kBytes - 1;
  EXPECT_EXIT((void)*past_end, testing::KilledBySignal(SIGBUS), "");
  UnguardMapping(guard);
  munmap(const_cast<char*>(guarded), kBytes);
  munmap(const_cast<char*>(map), kBytes);
}

}  // namespace
}  // namespace tteps::data
