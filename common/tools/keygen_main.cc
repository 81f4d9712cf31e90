// tteps-keygen DIR: makes the CURVE keys a job uses with --curve_dir DIR (common/curve.h).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "common/curve.h"
#include "common/version.h"

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("%s\n", tteps::VersionLine("tteps-keygen").c_str());
    return 0;
  }
  if (argc != 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fprintf(argc == 2 ? stdout : stderr,
                 "tteps-keygen DIR: writes a CURVE key pair for a tteps cluster.\n"
                 "  DIR/cluster.key      public and secret key (mode 0600; copy it to every "
                 "host of the job, nowhere else)\n"
                 "  DIR/cluster.pub      the public key\n"
                 "  DIR/authorized_keys  public keys allowed to connect (the cluster's)\n"
                 "Then run the job with --curve_dir DIR (launch/tteps --curve_dir DIR ...).\n");
    return argc == 2 ? 0 : 2;
  }
  // A flag in the place of DIR (--helpfull, --curve_dir) is a mistake, not a directory to make.
  if (argv[1][0] == '-') {
    std::fprintf(stderr, "tteps-keygen: %s is not a directory name; usage: tteps-keygen DIR\n",
                 argv[1]);
    return 2;
  }
  try {
    tteps::GenerateCurveKeys(argv[1]);
    tteps::LoadCurveKeys(argv[1]);  // what a job will check
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tteps-keygen: %s\n", e.what());
    return 1;
  }
  std::printf("wrote %s/cluster.key, cluster.pub and authorized_keys\n", argv[1]);
  return 0;
}
