// Every CUDA runtime and NCCL function libmpidist imports is defined by the emulation (with the
// real library's symbol version), the emulation is what is loaded, and libmpidist looks its
// libraries up through DT_RUNPATH so that LD_LIBRARY_PATH can substitute the emulation.
#include <dlfcn.h>

#include <cstdlib>
#include <sstream>
#include <string>

#include "emu.hpp"
#include "mpidist/mpidist.hpp"
#include "mpi_test.hpp"

namespace {

using EmuSymbols = mpidist_test::MpiTest;

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

TEST_F(EmuSymbols, EveryImportOfLibmpidistIsEmulated) {
  const std::string lib = env("MPIDIST_EMU_TEST_LIBMPIDIST"), dir = env("MPIDIST_EMU_TEST_DIR");
  ASSERT_FALSE(lib.empty());
  if (mpidist::rank() != 0) return;
  const auto imports = mpidist_test::run_command("nm -D --undefined-only " + lib, 30);
  ASSERT_EQ(imports.exit_code, 0) << imports.output;
  void* cudart = dlopen((dir + "/libcudart.so.13").c_str(), RTLD_NOW | RTLD_NOLOAD);
  void* nccl = dlopen((dir + "/libnccl.so.2").c_str(), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(cudart, nullptr) << "the emulated libcudart is not the one loaded";
  ASSERT_NE(nccl, nullptr) << "the emulated libnccl is not the one loaded";
  std::istringstream lines(imports.output);
  std::string type, symbol;
  int checked = 0;
  while (lines >> type >> symbol) {
    const std::string name = symbol.substr(0, symbol.find('@'));
    if (name.rfind("cuda", 0) == 0) {
      EXPECT_NE(dlvsym(cudart, name.c_str(), "libcudart.so.13"), nullptr) << name << " is not emulated";
      ++checked;
    } else if (name.rfind("nccl", 0) == 0) {
      EXPECT_NE(dlsym(nccl, name.c_str()), nullptr) << name << " is not emulated";
      ++checked;
    }
  }
  EXPECT_GT(checked, 5) << imports.output;
  Dl_info where{};
  ASSERT_NE(dladdr(dlvsym(RTLD_DEFAULT, "cudaMalloc", "libcudart.so.13"), &where), 0);
  EXPECT_NE(std::string(where.dli_fname).find(dir), std::string::npos) << where.dli_fname;
  dlclose(cudart);
  dlclose(nccl);
}

TEST_F(EmuSymbols, LibmpidistUsesRunpathNotRpath) {
  if (mpidist::rank() != 0) return;
  const auto dynamic = mpidist_test::run_command("readelf -d " + env("MPIDIST_EMU_TEST_LIBMPIDIST"), 30);
  ASSERT_EQ(dynamic.exit_code, 0) << dynamic.output;
  EXPECT_NE(dynamic.output.find("(NEEDED)             Shared library: [libcudart.so.13]"), std::string::npos);
  EXPECT_EQ(dynamic.output.find("(RPATH)"), std::string::npos) << "DT_RPATH would beat LD_LIBRARY_PATH";
}

}  // namespace
