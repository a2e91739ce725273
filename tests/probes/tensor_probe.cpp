// A small job for test_collectives_device: device collectives that must fail in a controlled way
// (a rank that never joins, two ranks on one GPU). Prints "PROBE rank R: ..." lines.
//   tensor_probe timeout    the last rank skips the second all_reduce; the others must get an Error
//   tensor_probe first-call the last rank computes for 40 s instead of its first device all_reduce
//                           (which creates the NCCL communicator); with MPIDIST_EMU_NCCL_INIT_STALL
//                           it calls, but its NCCL never reaches the others. Every rank that waits
//                           must get an Error; the job then ends non-zero at finalize
//   tensor_probe duplicate  run with every rank on one GPU; every rank must get the Error
//   tensor_probe mixed      some ranks see a GPU, some do not; rank 1 passes a wrong count to a
//                           host all_reduce: every rank must get the Error (the job agreed to check)
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "mpidist/mpidist.hpp"
#include "tensor_buffers.hpp"

namespace {

void say(const std::string& text) {
  std::printf("PROBE rank %d: %s\n", mpidist::rank(), text.c_str());
  std::fflush(stdout);
}

int timeout_probe() {
  mpidist_test::TestBuffer<float> buffer(std::vector<float>(1024, 1.0f));
  mpidist::all_reduce(buffer.view());  // everyone: creates the NCCL communicator
  say("first all_reduce gave " + std::to_string(buffer.read()[0]));
  const bool skips = mpidist::rank() == mpidist::world_size() - 1;
  if (skips) {
    // Never joins the second collective; leaves once the others had time to give up.
    std::this_thread::sleep_for(std::chrono::seconds(12));
    say("leaving without joining");
    _exit(0);
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    mpidist::all_reduce(buffer.view());
    say("second all_reduce returned without an error");
  } catch (const mpidist::Error& e) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    say("caught after " + std::to_string(static_cast<int>(seconds)) + " s: " + e.what());
  }
  // A timed-out collective cannot be finished; leave without MPI_Finalize, once the other waiting
  // ranks had time to say theirs: Hydra ends every rank the moment one leaves.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  _exit(0);
}

int first_call_probe() {
  mpidist_test::TestBuffer<float> buffer(std::vector<float>(1024, 1.0f));
  const bool skips = mpidist::rank() == mpidist::world_size() - 1 && std::getenv("MPIDIST_EMU_NCCL_INIT_STALL") == nullptr;
  const auto start = std::chrono::steady_clock::now();
  try {
    if (skips) std::this_thread::sleep_for(std::chrono::seconds(40));
    else mpidist::all_reduce(buffer.view());
    say("first all_reduce returned without an error");
  } catch (const mpidist::Error& e) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    char took[32];
    std::snprintf(took, sizeof took, "%.1f", seconds);
    say(std::string("caught after ") + took + " s: " + e.what());
    // The first rank to finalize ends the job: leave the others the moment to print theirs.
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  return 0;  // finalize() sees the timeout and ends the job (MPI_Abort), the sleeping rank included
}

int duplicate_probe() {
  try {
    mpidist_test::TestBuffer<float> buffer(std::vector<float>(16, 1.0f));
    mpidist::all_reduce(buffer.view());
    say("all_reduce returned without an error");
  } catch (const mpidist::Error& e) {
    say(std::string("caught: ") + e.what());
  }
  return 0;
}

int mixed_probe() {
  say("device " + mpidist::device().str());
  std::vector<float> fine(8, 1.0f);
  mpidist::all_reduce(std::span(fine));
  say("all_reduce gave " + std::to_string(static_cast<int>(fine[0])));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  mpidist::Environment env(argc, argv);
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "timeout") return timeout_probe();
  if (mode == "first-call") return first_call_probe();
  if (mode == "duplicate") return duplicate_probe();
  if (mode == "mixed") return mixed_probe();
  std::fprintf(stderr, "usage: tensor_probe timeout|first-call|duplicate|mixed\n");
  return 2;
}
