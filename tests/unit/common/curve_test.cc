// CURVE keys and sockets: tteps-keygen's files and their checks, a secured ROUTER that talks to
// a client holding the cluster key, and refuses (and counts) one with an unknown key or none.
#include "common/curve.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/transport.h"

namespace tteps {
namespace {

// A fresh key directory of this test process (ctest runs the tests of this file in parallel).
std::string KeyDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/tteps_curve_" + std::to_string(getpid()) + "_" +
                          ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
                          name;
  std::filesystem::remove_all(dir);
  GenerateCurveKeys(dir);
  return dir;
}

std::string LoadError(const std::string& dir) {
  try {
    LoadCurveKeys(dir);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(CurveKeys, KeygenWritesAPrivateSecretThatLoadsAndIsNeverOverwritten) {
  const std::string dir = KeyDir("keygen");
  struct stat st {};
  ASSERT_EQ(stat((dir + "/cluster.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const CurveKeys k = LoadCurveKeys(dir);
  EXPECT_EQ(k.public_key.size(), 40u);
  EXPECT_EQ(k.secret_key.size(), 40u);
  EXPECT_EQ(k.authorized.count(k.public_key), 1u);
  EXPECT_THROW(GenerateCurveKeys(dir), std::runtime_error);
  EXPECT_EQ(LoadCurveKeys(dir).secret_key, k.secret_key);
}

TEST(CurveKeys, LoadRefusesAnOpenSecretAForeignPairAndBadEntries) {
  const std::string dir = KeyDir("bad");
  chmod((dir + "/cluster.key").c_str(), 0644);
  EXPECT_NE(LoadError(dir).find("open to group or others (mode 0644): chmod 600"),
            std::string::npos);
  chmod((dir + "/cluster.key").c_str(), 0600);
  EXPECT_EQ(LoadError(dir), "");

  // A public key that is not the secret's.
  const CurveKeys other = LoadCurveKeys(KeyDir("other"));
  const CurveKeys mine = LoadCurveKeys(dir);
  std::ofstream(dir + "/cluster.key") << other.public_key << "\n" << mine.secret_key << "\n";
  EXPECT_NE(LoadError(dir).find("does not belong to the secret key"), std::string::npos);
  std::ofstream(dir + "/cluster.key") << mine.public_key << "\n" << mine.secret_key << "\n";

  std::ofstream(dir + "/authorized_keys") << mine.public_key << "\nnot-a-key\n";
  EXPECT_NE(LoadError(dir).find("authorized_keys: entry 2 is not a Z85 public key"),
            std::string::npos);
  std::ofstream(dir + "/authorized_keys") << other.public_key << "\n";
  EXPECT_NE(LoadError(dir).find("lacks the cluster's own public key"), std::string::npos);
  EXPECT_NE(LoadError(dir + "/missing").find("tteps-keygen"), std::string::npos);
}

// A secured ROUTER on loopback and its context's ZAP handler.
class CurveSocketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = KeyDir("sockets");
    security_ = SecureContext(server_ctx_, dir_);
    router_ = MakeSocket(server_ctx_, zmq::socket_type::router);  // secured: made after it
    endpoint_ = BindTcp(router_, "127.0.0.1");
  }
  void TearDown() override {
    router_.close();
    security_.reset();
  }
  // Sends a heartbeat from `dealer`; returns whether the ROUTER got it within the time.
  bool Delivered(zmq::socket_t& dealer) {
    dealer.connect(endpoint_);
    Header h;
    h.type = MsgType::kHeartbeat;
    SendMessage(dealer, h);
    Message m;
    return ReceiveMessage(router_, true, 700, &m);
  }

  std::string dir_;
  zmq::context_t server_ctx_, client_ctx_;
  std::unique_ptr<CurveSecurity> security_;
  zmq::socket_t router_;
  std::string endpoint_;
};

TEST_F(CurveSocketTest, TheClusterKeyGetsThrough) {
  const auto client_security = SecureContext(client_ctx_, dir_);
  auto dealer = MakeSocket(client_ctx_, zmq::socket_type::dealer);
  EXPECT_TRUE(Delivered(dealer));
  EXPECT_EQ(security_->refused(), 0);
  dealer.close();
}

TEST_F(CurveSocketTest, AnUnknownKeyIsRefusedAndCounted) {
  const CurveKeys stranger = LoadCurveKeys(KeyDir("stranger"));
  zmq::socket_t dealer(client_ctx_, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.set(zmq::sockopt::curve_serverkey, LoadCurveKeys(dir_).public_key);  // it knows ours
  dealer.set(zmq::sockopt::curve_publickey, stranger.public_key);
  dealer.set(zmq::sockopt::curve_secretkey, stranger.secret_key);
  EXPECT_FALSE(Delivered(dealer));
  EXPECT_GE(security_->refused(), 1);
}

TEST_F(CurveSocketTest, APlainClientGetsNothingThrough) {
  auto dealer = MakeSocket(client_ctx_, zmq::socket_type::dealer);  // no CURVE on its context
  EXPECT_FALSE(Delivered(dealer));
}

}  // namespace
}  // namespace tteps
