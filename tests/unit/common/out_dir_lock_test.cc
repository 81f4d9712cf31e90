// Output-directory ownership (OutDirLock) and SIGTERM as a flag (CatchInterrupts).
#include "common/out_dir_lock.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "common/interrupt.h"

namespace tteps {
namespace {

namespace fs = std::filesystem;

std::string Fresh(const std::string& name) {
  const std::string dir = testing::TempDir() + "tteps_outdir_" + name;
  fs::remove_all(dir);
  return dir;
}

std::string RefusalOf(const std::string& dir, bool allow_finished = false) {
  try {
    OutDirLock lock(dir, allow_finished);
  } catch (const OutDirRefused& e) {
    return e.what();
  }
  return "";
}

TEST(OutDirLock, ASecondOwnerIsRefusedNamingTheFirstUntilItLetsGo) {
  const std::string dir = Fresh("busy");
  EXPECT_EQ(OutDirProblem(dir), "");  // not there yet: it will be created
  auto first = std::make_unique<OutDirLock>(dir);
  const std::string pid = "pid " + std::to_string(::getpid()) + " on host ";
  const std::string why = RefusalOf(dir);
  EXPECT_NE(why.find("is in use by a running job (" + pid), std::string::npos) << why;
  EXPECT_NE(OutDirProblem(dir).find(pid), std::string::npos);
  first.reset();
  EXPECT_EQ(RefusalOf(dir), "");
  EXPECT_EQ(OutDirProblem(dir), "");
}

TEST(OutDirLock, AFinishedJobsDirectoryIsRefusedUnlessAllowed) {
  const std::string dir = Fresh("finished");
  fs::create_directories(dir);
  std::ofstream(dir + "/summary.json") << "{}\n";
  EXPECT_NE(RefusalOf(dir).find("holds a finished job (" + dir + "/summary.json)"),
            std::string::npos);
  EXPECT_NE(OutDirProblem(dir).find("finished job"), std::string::npos);
  EXPECT_EQ(RefusalOf(dir, /*allow_finished=*/true), "");
}

TEST(OutDirLock, AFileIsNotADirectory) {
  const std::string path = Fresh("file");
  std::ofstream(path) << "x";
  EXPECT_NE(OutDirProblem(path).find("is not a directory"), std::string::npos);
  EXPECT_NE(RefusalOf(path).find("cannot create the output directory"), std::string::npos);
}

TEST(Interrupts, ASigtermIsAFlagNotAnEnd) {
  CatchInterrupts();
  EXPECT_EQ(InterruptSignal(), 0);
  ASSERT_EQ(::raise(SIGTERM), 0);
  EXPECT_EQ(InterruptSignal(), SIGTERM);  // and this process lives on
  EXPECT_EQ(SignalName(SIGTERM), "SIGTERM");
  EXPECT_EQ(SignalName(SIGINT), "SIGINT");
}

// The same interrupt from several senders (scancel, the launcher) within 2 s is one; a second
// one later ends the process, as the default would.
TEST(InterruptsDeathTest, ASecondSignalWithin2sIsTheSameOneAndALaterOneEndsTheProcess) {
  EXPECT_EXIT(
      {
        CatchInterrupts();
        ::raise(SIGTERM);
        ::raise(SIGTERM);
        if (InterruptSignal() != SIGTERM) std::_Exit(3);
        std::this_thread::sleep_for(std::chrono::milliseconds(2100));
        ::raise(SIGTERM);
        std::_Exit(0);
      },
      ::testing::KilledBySignal(SIGTERM), "");
}

}  // namespace
}  // namespace tteps
