// libFuzzer target: bytes as a flight-recorder dump file, through the reader and the analyzer
// (alone, and beside a fixed second rank's dump so the cross-rank paths run too). Anything but
// a DumpError is a bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trace_analysis.hpp"
#include "trace_dump.hpp"

namespace {
// Rank 1 of 2, stuck in #2 on world.
const char* const other_rank = R"({"format":"mpidist-trace","version":1,"rank":1,"world_size":2,"host":"h","pid":2,
"reason":"watchdog","message":"","now_ns":900,"capacity":4,"recorded":2,
"communicators":[{"name":"world","ranks":[0,1],"rank":1,"sequence":2,"hash":"0"}],
"entries":[{"comm":"world","seq":1,"op":"barrier","count":0,"bytes":0,"dtype":"","root":-1,"reduce":"","type":"",
"state":"completed","start_ns":10,"end_ns":20,"hash":"1"},
{"comm":"world","seq":2,"op":"all_reduce","count":4,"bytes":16,"dtype":"float32","root":-1,"reduce":"sum","type":"",
"state":"started","start_ns":30,"end_ns":0,"hash":"2"}]})";
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  using namespace mpidist::trace;
  const std::string_view text(reinterpret_cast<const char*>(bytes), size);
  try {
    std::vector<Dump> dumps{parse_dump(text, "fuzz")};
    const auto alone = analyze(make_dump_set(dumps, "fuzz"));
    (void)format_text(alone);
    (void)format_json(alone);
    if (dumps[0].rank != 1) {
      dumps.push_back(parse_dump(other_rank, "other"));
      const auto pair = analyze(make_dump_set(dumps, "fuzz"));
      (void)format_text(pair);
      (void)format_json(pair);
    }
  } catch (const DumpError&) {
  }
  return 0;
}
