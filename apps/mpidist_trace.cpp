// mpidist-trace DIR [--json]: reads the flight-recorder dumps a job left in DIR (one per rank,
// see apps/trace/FORMAT.md) and prints the first collective that did not complete everywhere,
// who never joined it and what they were doing instead, and every mismatched call.
// Exit status: 0 when it could analyze (whatever it found), 2 on unusable input, 1 on bad usage.
#include <cstdio>
#include <exception>
#include <string>

#include "trace/trace_analysis.hpp"
#include "trace/trace_dump.hpp"

namespace {

int usage() {
  std::fputs("usage: mpidist-trace DIR [--json]\n"
             "  DIR holds mpidist-trace-rank<N>.json files (MPIDIST_TRACE_DIR of the job)\n",
             stderr);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--json")
      json = true;
    else if (arg == "-h" || arg == "--help")
      return usage(), 0;
    else if (!arg.empty() && arg[0] == '-')
      return usage();
    else if (dir.empty())
      dir = arg;
    else
      return usage();
  }
  if (dir.empty()) return usage();
  try {
    const auto findings = mpidist::trace::analyze(mpidist::trace::read_dump_dir(dir));
    const std::string text = json ? format_json(findings) : format_text(findings);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  } catch (const mpidist::trace::DumpError& e) {
    std::fprintf(stderr, "mpidist-trace: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpidist-trace: cannot analyze %s: %s\n", dir.c_str(), e.what());
    return 2;
  }
}
