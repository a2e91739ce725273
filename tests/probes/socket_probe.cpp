// For tests/security: a job that has used every kind of mpidist call (tensor, object, guard,
// barrier), says so with its pid, and then waits in place until the file named by argv[1]
// exists (or 60 s), so the test can list the sockets it has open.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "mpidist/mpidist.hpp"

int main(int argc, char** argv) {
  mpidist::Environment env(argc, argv);
  std::vector<float> values(1024, 1.0f);
  mpidist::all_reduce(std::span(values));
  const auto text = mpidist::broadcast(std::string("hello"), mpidist::world_size() - 1);
  const auto all = mpidist::all_gather(mpidist::rank());
  mpidist::run_on_main([] {});
  mpidist::barrier();
  std::printf("SOCKET_PROBE rank %d pid %d ready (%s, %zu)\n", mpidist::rank(), static_cast<int>(getpid()),
              text.c_str(), all.size());
  std::fflush(stdout);
  const std::string release = argc > 1 ? argv[1] : "";
  for (int i = 0; i < 600 && !release.empty() && !std::filesystem::exists(release); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  mpidist::barrier();
  return 0;
}
