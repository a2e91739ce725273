// One rank's flight-recorder dump, read and checked field by field.
#include "trace_dump.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <regex>
#include <sstream>

#include "json_reader.hpp"

namespace mpidist::trace {
namespace {

// The recorder keeps typeid(T).name() as it is (mangled: no allocation per call); people read it
// demangled, with std::string under its usual name. A name that does not demangle (cut short by
// the recorder's fixed field, or not mangled) is shown as recorded.
std::string readable_type(const std::string& recorded) {
  if (recorded.empty()) return recorded;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> text(abi::__cxa_demangle(recorded.c_str(), nullptr, nullptr, &status),
                                              std::free);
  if (status != 0 || !text) return recorded;
  std::string out = text.get();
  static const std::string long_name = "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >";
  for (std::size_t at = out.find(long_name); at != std::string::npos; at = out.find(long_name))
    out.replace(at, long_name.size(), "std::string");
  return out;
}

// A dump is a few hundred KiB (2000 entries); anything past this is not one.
constexpr std::uintmax_t max_dump_bytes = std::uintmax_t{1} << 30;

// Reads the fields of one JSON object, each error naming the file and the field's path.
class Fields {
 public:
  Fields(const Json& object, const std::string& source, std::string path)
      : object_(object), source_(source), path_(std::move(path)) {
    if (!object.is(Json::Kind::Object)) fail(path_.empty() ? "the document" : path_, "must be an object");
  }

  const Json& get(const char* key) const {
    const Json* v = object_.find(key);
    if (v == nullptr) fail(name(key), "is missing");
    return *v;
  }
  std::string string(const char* key) const {
    const Json& v = get(key);
    if (!v.is(Json::Kind::String)) fail(name(key), "must be a string");
    return v.as_string();
  }
  std::int64_t integer(const char* key, std::int64_t lo, std::int64_t hi) const {
    const Json& v = get(key);
    if (!v.is(Json::Kind::Integer)) fail(name(key), "must be an integer");
    const std::uint64_t m = v.magnitude();
    const auto limit = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (m > limit) fail(name(key), "is out of range");
    const std::int64_t x = v.negative() ? -static_cast<std::int64_t>(m) : static_cast<std::int64_t>(m);
    if (x < lo || x > hi)
      fail(name(key), std::to_string(x) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return x;
  }
  std::uint64_t count(const char* key) const {
    const Json& v = get(key);
    if (!v.is(Json::Kind::Integer) || v.negative()) fail(name(key), "must be a non-negative integer");
    return v.magnitude();
  }
  const Json::Array& array(const char* key) const {
    const Json& v = get(key);
    if (!v.is(Json::Kind::Array)) fail(name(key), "must be an array");
    return v.as_array();
  }
  std::string name(const char* key) const { return path_.empty() ? key : path_ + "." + key; }
  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw DumpError(source_ + ": '" + field + "' " + what);
  }

 private:
  const Json& object_;
  const std::string& source_;
  std::string path_;
};

std::string indexed(const char* list, std::size_t i) { return std::string(list) + "[" + std::to_string(i) + "]"; }

CommInfo read_comm(const Json& j, const std::string& source, std::size_t i, int world_size) {
  const Fields f(j, source, indexed("communicators", i));
  CommInfo c;
  c.name = f.string("name");
  const auto& ranks = f.array("ranks");
  if (ranks.empty() || ranks.size() > static_cast<std::size_t>(world_size))
    f.fail(f.name("ranks"), "must list between 1 and world_size members");
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    const Json& r = ranks[k];
    if (!r.is(Json::Kind::Integer) || r.negative() || r.magnitude() >= static_cast<std::uint64_t>(world_size))
      f.fail(f.name("ranks") + "[" + std::to_string(k) + "]", "must be a world rank below world_size");
    c.ranks.push_back(static_cast<int>(r.magnitude()));
  }
  auto sorted = c.ranks;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) f.fail(f.name("ranks"), "lists a rank twice");
  c.rank = static_cast<int>(f.integer("rank", 0, static_cast<std::int64_t>(c.ranks.size()) - 1));
  c.sequence = f.count("sequence");
  c.hash = f.string("hash");
  return c;
}

Entry read_entry(const Json& j, const std::string& source, std::size_t i) {
  const Fields f(j, source, indexed("entries", i));
  Entry e;
  e.comm = f.string("comm");
  e.seq = f.count("seq");
  e.op = f.string("op");
  if (e.op.empty()) f.fail(f.name("op"), "must not be empty");
  // Point-to-point calls are outside the communicator's numbered sequence: theirs is 0.
  if (e.seq == 0 && e.op != "send" && e.op != "recv") f.fail(f.name("seq"), "must be at least 1");
  e.count = f.count("count");
  e.bytes = f.count("bytes");
  e.dtype = f.string("dtype");
  e.root = f.integer("root", -1, max_world_size);
  e.reduce = f.string("reduce");
  e.type = readable_type(f.string("type"));
  e.state = f.string("state");
  if (e.state != "queued" && e.state != "started" && e.state != "completed" && e.state != "failed")
    f.fail(f.name("state"), "'" + e.state + "' is not queued, started, completed or failed");
  e.start_ns = f.integer("start_ns", 0, std::numeric_limits<std::int64_t>::max());
  e.end_ns = f.integer("end_ns", 0, std::numeric_limits<std::int64_t>::max());
  e.hash = f.string("hash");
  return e;
}

}  // namespace

Dump parse_dump(std::string_view text, const std::string& source) {
  Json doc;
  try {
    doc = parse_json(text, source);
  } catch (const JsonError& e) {
    throw DumpError(e.what());
  }
  const Fields f(doc, source, "");
  if (f.string("format") != "mpidist-trace") f.fail("format", "is not \"mpidist-trace\"");
  const std::uint64_t version = f.count("version");
  if (version != 1) f.fail("version", std::to_string(version) + " is not supported (this reader knows version 1)");
  Dump d;
  d.source = source;
  d.world_size = static_cast<int>(f.integer("world_size", 1, max_world_size));
  d.rank = static_cast<int>(f.integer("rank", 0, d.world_size - 1));
  d.host = f.string("host");
  d.pid = f.integer("pid", 0, std::numeric_limits<std::int64_t>::max());
  d.reason = f.string("reason");
  d.message = f.string("message");
  d.now_ns = f.integer("now_ns", 0, std::numeric_limits<std::int64_t>::max());
  d.capacity = f.count("capacity");
  d.recorded = f.count("recorded");
  const auto& comms = f.array("communicators");
  for (std::size_t i = 0; i < comms.size(); ++i) {
    d.communicators.push_back(read_comm(comms[i], source, i, d.world_size));
    const CommInfo& c = d.communicators.back();
    if (c.ranks[static_cast<std::size_t>(c.rank)] != d.rank)
      f.fail(indexed("communicators", i) + ".rank", "does not point at this dump's world rank");
  }
  const auto& entries = f.array("entries");
  if (entries.size() > d.capacity)
    f.fail("entries", "holds " + std::to_string(entries.size()) + " entries, more than the capacity " +
                          std::to_string(d.capacity));
  if (entries.size() > d.recorded)
    f.fail("entries", "holds " + std::to_string(entries.size()) + " entries, more than 'recorded' (" +
                          std::to_string(d.recorded) + ")");
  for (std::size_t i = 0; i < entries.size(); ++i) d.entries.push_back(read_entry(entries[i], source, i));
  return d;
}

DumpSet make_dump_set(std::vector<Dump> dumps, const std::string& dir) {
  if (dumps.empty()) throw DumpError(dir + ": no mpidist-trace-rank<N>.json dumps in this directory");
  DumpSet set;
  set.dir = dir;
  set.world_size = dumps.front().world_size;
  std::sort(dumps.begin(), dumps.end(), [](const Dump& a, const Dump& b) { return a.rank < b.rank; });
  for (std::size_t i = 0; i < dumps.size(); ++i) {
    if (dumps[i].world_size != set.world_size)
      throw DumpError(dumps[i].source + ": world_size " + std::to_string(dumps[i].world_size) + " but " +
                      dumps.front().source + " says " + std::to_string(set.world_size) +
                      " (dumps of different jobs in one directory?)");
    if (i > 0 && dumps[i].rank == dumps[i - 1].rank)
      throw DumpError(dumps[i].source + ": rank " + std::to_string(dumps[i].rank) + " also dumped in " +
                      dumps[i - 1].source);
  }
  std::size_t next = 0;
  for (int r = 0; r < set.world_size; ++r) {
    if (next < dumps.size() && dumps[next].rank == r)
      ++next;
    else
      set.missing.push_back(r);
  }
  set.dumps = std::move(dumps);
  return set;
}

DumpSet read_dump_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw DumpError(dir + ": not a directory");
  static const std::regex name_pattern("mpidist-trace-rank([0-9]{1,9})\\.json");
  std::vector<Dump> dumps;
  fs::directory_iterator it(dir, ec);
  if (ec) throw DumpError(dir + ": cannot list: " + ec.message());
  for (const auto& item : it) {
    std::smatch m;
    const std::string file = item.path().filename().string();
    if (!std::regex_match(file, m, name_pattern)) continue;
    const std::string path = item.path().string();
    const auto size = fs::file_size(item.path(), ec);
    if (ec) throw DumpError(path + ": cannot read: " + ec.message());
    if (size > max_dump_bytes) throw DumpError(path + ": " + std::to_string(size) + " bytes is too large for a dump");
    std::ifstream in(item.path(), std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) throw DumpError(path + ": cannot read");
    dumps.push_back(parse_dump(text.str(), path));
    if (std::to_string(dumps.back().rank) != m[1].str())
      throw DumpError(path + ": the file name says rank " + m[1].str() + " but it holds rank " +
                      std::to_string(dumps.back().rank));
  }
  return make_dump_set(std::move(dumps), dir);
}

}  // namespace mpidist::trace
