// The flight recorder's ring of recent calls, its dump, and the groups it tracks.
#include "watch/flight_recorder.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "core/context.hpp"
#include "core/group.hpp"
#include "mpidist/detail/type_names.hpp"
#include "mpidist/reduce_op.hpp"
#include "mpidist/tensor.hpp"

namespace mpidist::detail {
namespace {

std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The per-call times: the same CLOCK_MONOTONIC, read at the kernel tick's resolution (1-4 ms).
// The fine clock costs about 40 ns a read on a virtual machine (kvm-clock), twice a call; this
// one about 4 ns. The watchdog and the analyzer measure waits in seconds against it.
std::int64_t call_time_ns() noexcept {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

// strnlen and memcpy run a word or a vector at a time: a byte loop cost 90 instructions for
// "all_reduce", a tenth of a small call.
void copy_text(char* to, std::size_t size, const char* from) noexcept {
  const std::size_t n = from != nullptr ? ::strnlen(from, size - 1) : 0;
  if (n > 0) std::memcpy(to, from, n);
  to[n] = '\0';
}

// One 64-bit word into the hash: a multiply and a shift (a few cycles), not FNV's eight
// byte-wise rounds; runs on every collective.
std::uint64_t mix(std::uint64_t hash, std::uint64_t value) noexcept {
  hash = (hash ^ value) * 0x9e3779b97f4a7c15ULL;
  return hash ^ (hash >> 29);
}

// The operation's name, eight bytes to a word, assembled in a register (a memcpy of a partial
// word through the stack stalls store forwarding, 20 cycles a word).
std::uint64_t mix_text(std::uint64_t hash, const char* text) noexcept {
  std::uint64_t word = 0;
  unsigned shift = 0;
  for (; *text != '\0'; ++text) {
    word |= static_cast<std::uint64_t>(static_cast<unsigned char>(*text)) << shift;
    if ((shift += 8) == 64) hash = mix(hash, word), word = 0, shift = 0;
  }
  return mix(hash, word ^ shift);
}

// Formats the dump into a fixed buffer and writes it out in pieces: no heap, no stdio, so that a
// signal handler can use it.
class DumpWriter {
 public:
  DumpWriter(int fd, char* buffer, std::size_t size) noexcept : fd_(fd), buffer_(buffer), size_(size) {}
  ~DumpWriter() { flush(); }
  void raw(const char* text) noexcept {
    while (*text) put(*text++);
  }
  void text(const char* s) noexcept {
    put('"');
    for (; s && *s; ++s) {
      const auto c = static_cast<unsigned char>(*s);
      if (c == '"' || c == '\\') {
        put('\\'), put(static_cast<char>(c));
      } else if (c < 0x20) {
        const char* hex = "0123456789abcdef";
        raw("\\u00"), put(hex[c >> 4]), put(hex[c & 15]);
      } else {
        put(static_cast<char>(c));
      }
    }
    put('"');
  }
  void number(std::int64_t value) noexcept {
    if (value < 0) put('-'), value = -value;
    unsigned_number(static_cast<std::uint64_t>(value));
  }
  void unsigned_number(std::uint64_t value) noexcept {
    char digits[24];
    int n = 0;
    do digits[n++] = static_cast<char>('0' + value % 10), value /= 10;
    while (value != 0);
    while (n) put(digits[--n]);
  }
  void hex(std::uint64_t value) noexcept {
    const char* hex = "0123456789abcdef";
    put('"');
    for (int shift = 60; shift >= 0; shift -= 4) put(hex[(value >> shift) & 15]);
    put('"');
  }
  void key(const char* name) noexcept { text(name), put(':'); }
  bool ok() const noexcept { return ok_; }
  void flush() noexcept {
    std::size_t done = 0;
    while (done < used_) {
      const auto n = ::write(fd_, buffer_ + done, used_ - done);
      if (n <= 0) { ok_ = false; break; }
      done += static_cast<std::size_t>(n);
    }
    used_ = 0;
  }

 private:
  void put(char c) noexcept {
    if (used_ == size_) flush();
    buffer_[used_++] = c;
  }
  int fd_;
  char* buffer_;
  std::size_t size_;
  std::size_t used_ = 0;
  bool ok_ = true;
};

const char* state_name(CallState state) noexcept {
  switch (state) {
    case CallState::Queued: return "queued";
    case CallState::Started: return "started";
    case CallState::Completed: return "completed";
    case CallState::Failed: return "failed";
    default: return "empty";
  }
}

// Names from the fixed tables; string_views into static storage, NUL-terminated.
const char* dtype_name(int dtype) noexcept { return dtype < 0 ? "" : to_string(static_cast<DataType>(dtype)).data(); }
const char* reduce_name(int op) noexcept { return op < 0 ? "" : to_string(static_cast<ReduceOp>(op)).data(); }

}  // namespace

std::uint64_t op_key(const char* op) noexcept { return mix_text(0, op); }

std::uint64_t fold_fingerprint(std::uint64_t hash, const Fingerprint& call) noexcept {
  return fold_fingerprint(hash, call, op_key(call.op));
}

std::uint64_t fold_fingerprint(std::uint64_t hash, const Fingerprint& call, std::uint64_t key) noexcept {
  hash = mix(hash, key);
  hash = mix(hash, call.count);
  hash = mix(hash, static_cast<std::uint64_t>(call.dtype + 1) | static_cast<std::uint64_t>(call.reduce + 1) << 16 |
                       static_cast<std::uint64_t>(static_cast<std::uint32_t>(call.root)) << 32);
  return mix(hash, call.type_tag);
}

FlightRecorder::FlightRecorder(RankRecord& mine, int world_size, std::string trace_dir)
    : mine_(&mine), world_size_(world_size), buffer_(64 * 1024) {
  comms_.reserve(4096);
  if (!trace_dir.empty()) {
    path_ = trace_dir + "/mpidist-trace-rank" + std::to_string(mine.header.world_rank) + ".json";
    temp_path_ = path_ + ".partial";
  }
}

int FlightRecorder::track(std::uint64_t key, const std::string& name, const std::vector<int>& world_ranks, int rank) {
  std::lock_guard lock(comms_mutex_);
  int slot = -1;
  auto& comms = mine_->header.comms;
  for (std::size_t i = 0; i < tracked_communicators && slot < 0; ++i) {
    std::uint64_t expected = 0;
    if (comms[i].key.load(std::memory_order_relaxed) == 0) {
      comms[i].started.store(0, std::memory_order_relaxed);
      comms[i].done.store(0, std::memory_order_relaxed);
      comms[i].failed_at.store(0, std::memory_order_relaxed);
      comms[i].refused.store(0, std::memory_order_relaxed);
      comms[i].relayed.store(0, std::memory_order_relaxed);
      comms[i].hash.store(0, std::memory_order_relaxed);
      if (comms[i].key.compare_exchange_strong(expected, key, std::memory_order_release)) slot = static_cast<int>(i);
    }
  }
  if (comms_.size() < comms_.capacity()) comms_.push_back(CommDescriptor{key, name, world_ranks, rank, slot, true});
  return slot;
}

void FlightRecorder::untrack(std::uint64_t key) noexcept {
  std::lock_guard lock(comms_mutex_);
  for (auto& d : comms_)
    if (d.key == key && d.alive) {
      d.alive = false;
      if (d.slot >= 0) mine_->header.comms[d.slot].key.store(0, std::memory_order_release);
    }
}

std::uint64_t FlightRecorder::begin(std::uint64_t key, int slot, std::uint64_t seq, std::uint64_t hash,
                                    const Fingerprint& call, float timeout_seconds) noexcept {
  auto& h = mine_->header;
  const std::uint64_t id = h.recorded.load(std::memory_order_relaxed) + 1;
  h.recorded.store(id, std::memory_order_relaxed);
  TraceEntry& e = mine_->ring()[ring_index(id, h.capacity)];
  e.id.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  e.comm_key = key, e.seq = seq, e.count = call.count, e.bytes = call.bytes, e.hash = hash;
  e.start_ns = call_time_ns();
  e.end_ns.store(0, std::memory_order_relaxed);
  e.state.store(CallState::Started, std::memory_order_relaxed);
  e.dtype = call.dtype, e.root = call.root, e.reduce = call.reduce, e.timeout_seconds = timeout_seconds;
  e.tag = call.tag;
  copy_text(e.op, op_name_size, call.op);
  if (call.async) {  // the dump, the watchdog and mpidist-trace show "all_reduce_async"
    std::size_t end = 0;
    while (e.op[end] != '\0') ++end;
    copy_text(e.op + end, op_name_size - end, "_async");
  }
  if (call.type != nullptr || e.type[0] != '\0') copy_text(e.type, type_name_size, call.type);
  e.id.store(id, std::memory_order_release);
  if (slot >= 0) h.comms[slot].started.store(seq, std::memory_order_release);
  h.current.store(id, std::memory_order_release);
  return id;
}

void FlightRecorder::end(std::uint64_t id, CallState state, int slot, std::uint64_t seq, std::uint64_t hash,
                         bool broke) noexcept {
  auto& h = mine_->header;
  TraceEntry& e = mine_->ring()[ring_index(id, h.capacity)];
  if (e.id.load(std::memory_order_relaxed) == id) {
    e.end_ns.store(call_time_ns(), std::memory_order_relaxed);
    e.hash = hash;
    e.state.store(state, std::memory_order_release);
  }
  if (slot >= 0) {
    auto& progress = h.comms[slot];
    const auto v = progress.version.load(std::memory_order_relaxed);
    progress.version.store(v + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    progress.done.store(seq, std::memory_order_relaxed);
    progress.hash.store(hash, std::memory_order_relaxed);
    progress.version.store(v + 2, std::memory_order_release);
    if (broke && progress.failed_at.load(std::memory_order_relaxed) == 0)
      progress.failed_at.store(seq, std::memory_order_release);
  }
  if (broke) h.last_break.store(id, std::memory_order_release);
  h.last_done.store(id, std::memory_order_release);
  if (h.current.load(std::memory_order_relaxed) == id) h.current.store(0, std::memory_order_release);
}

const CommDescriptor* FlightRecorder::find(std::uint64_t key) const noexcept {
  // The newest descriptor of a key wins: a communicator made again gets the same key.
  for (auto it = comms_.rbegin(); it != comms_.rend(); ++it)
    if (it->key == key) return &*it;
  return nullptr;
}

std::string FlightRecorder::comm_name(std::uint64_t key) const {
  if (const auto* d = find(key)) return d->name;
  char text[32];
  std::snprintf(text, sizeof text, "comm %016llx", static_cast<unsigned long long>(key));
  return text;
}

namespace {
long this_tid() noexcept { return static_cast<long>(::syscall(SYS_gettid)); }  // async-signal-safe
}  // namespace

void FlightRecorder::await_dump() const noexcept {
  // 3 s in steps of 10 ms; never for our own thread's dump (a signal taken while writing it).
  const long writer = writer_.load(std::memory_order_acquire);
  if (writer == 0 || writer == this_tid()) return;
  for (int i = 0; i < 300 && writer_.load(std::memory_order_acquire) != 0; ++i) {
    timespec step{0, 10'000'000};
    ::nanosleep(&step, nullptr);
  }
}

bool FlightRecorder::dump(const char* reason, const char* message) noexcept {
  if (path_.empty()) return false;
  // The watchdog thread and a signal handler may both dump; they share the temporary file.
  long idle = 0;
  if (!writer_.compare_exchange_strong(idle, this_tid(), std::memory_order_acq_rel)) {
    await_dump();
    return writer_.load(std::memory_order_acquire) == 0 && last_dump_ok_.load() != 0;
  }
  // The launcher's SIGTERM waits until the file is whole: taken on this thread mid-write (a report
  // at finalize as another rank ends the job), its handler could neither wait for the file nor
  // write its own, and the rank would leave no dump.
  sigset_t term, before;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, &before);
  const bool ok = write_dump(reason, message);
  last_dump_ok_.store(ok ? 1 : 0);
  writer_.store(0, std::memory_order_release);
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  return ok;
}

bool FlightRecorder::write_dump(const char* reason, const char* message) noexcept {
  const int fd = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const auto& h = mine_->header;
  bool ok = false;
  {
    DumpWriter out(fd, buffer_.data(), buffer_.size());
    out.raw("{\n  \"format\": \"mpidist-trace\",\n  \"version\": 1,\n  ");
    out.key("rank"), out.number(h.world_rank), out.raw(",\n  ");
    out.key("world_size"), out.number(world_size_), out.raw(",\n  ");
    out.key("host"), out.text(h.host), out.raw(",\n  ");
    out.key("pid"), out.unsigned_number(h.pid.load()), out.raw(",\n  ");
    out.key("reason"), out.text(reason), out.raw(",\n  ");
    out.key("message"), out.text(message), out.raw(",\n  ");
    out.key("now_ns"), out.number(now_ns()), out.raw(",\n  ");
    out.key("capacity"), out.unsigned_number(h.capacity), out.raw(",\n  ");
    const auto recorded = h.recorded.load(std::memory_order_acquire);
    out.key("recorded"), out.unsigned_number(recorded), out.raw(",\n  \"communicators\": [");
    bool first = true;
    for (const auto& d : comms_) {
      std::uint64_t started = 0, hash = 0;
      if (d.slot >= 0 && d.alive) read_progress(h.comms[d.slot], started, hash);  // `sequence`: calls finished
      out.raw(first ? "\n    {" : ",\n    {");
      first = false;
      out.key("name"), out.text(d.name.c_str()), out.raw(", ");
      out.key("ranks"), out.raw("[");
      for (std::size_t i = 0; i < d.world_ranks.size(); ++i) {
        if (i) out.raw(",");
        out.number(d.world_ranks[i]);
      }
      out.raw("], "), out.key("rank"), out.number(d.rank), out.raw(", ");
      out.key("alive"), out.raw(d.alive ? "true" : "false"), out.raw(", ");
      out.key("sequence"), out.unsigned_number(started), out.raw(", ");
      out.key("hash"), out.hex(hash), out.raw("}");
    }
    out.raw("\n  ],\n  \"entries\": [");
    const std::uint64_t oldest = oldest_held(recorded, h.capacity);
    first = true;
    for (std::uint64_t id = oldest; id <= recorded; ++id) {
      const auto e = read_entry(*mine_, id);
      if (!e.valid) continue;
      const CommDescriptor* d = find(e.comm_key);
      out.raw(first ? "\n    {" : ",\n    {");
      first = false;
      out.key("id"), out.unsigned_number(e.id), out.raw(", ");
      out.key("comm"), out.text(d ? d->name.c_str() : "unknown"), out.raw(", ");
      out.key("seq"), out.unsigned_number(e.seq), out.raw(", ");
      out.key("op"), out.text(e.op), out.raw(", ");
      out.key("count"), out.unsigned_number(e.count), out.raw(", ");
      out.key("bytes"), out.unsigned_number(e.bytes), out.raw(", ");
      out.key("dtype"), out.text(dtype_name(e.dtype)), out.raw(", ");
      out.key("root"), out.number(e.root), out.raw(", ");
      out.key("reduce"), out.text(reduce_name(e.reduce)), out.raw(", ");
      out.key("type"), out.text(e.type), out.raw(", ");
      out.key("state"), out.text(state_name(e.state)), out.raw(", ");
      out.key("start_ns"), out.number(e.start_ns), out.raw(", ");
      out.key("end_ns"), out.number(e.end_ns), out.raw(", ");
      out.key("hash"), out.hex(e.hash), out.raw("}");
    }
    out.raw("\n  ]\n}\n");
    out.flush();
    ok = out.ok();
  }
  ::close(fd);
  if (!ok || ::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    ::unlink(temp_path_.c_str());
    return false;
  }
  return true;
}

EntrySnapshot snapshot_of(const Fingerprint& call) noexcept {
  EntrySnapshot shape;
  copy_text(shape.op, op_name_size, call.op);
  copy_text(shape.type, type_name_size, call.type);
  if (call.tag != no_tag) write_tag_text(shape.type, call.tag);
  shape.count = call.count, shape.dtype = call.dtype, shape.root = call.root, shape.reduce = call.reduce;
  return shape;
}

std::string describe_call(const EntrySnapshot& e) {
  std::string text = e.op;
  const bool sending = text == "send";
  if (sending || text == "recv")  // point-to-point: root is the peer, type the tag
    return text + " " + std::to_string(e.count) + " " + dtype_name(e.dtype) + (sending ? " to " : " from ") +
           (e.root >= 0 ? "rank " + std::to_string(e.root) : std::string("any rank")) + " (" + e.type + ")";
  if (e.dtype >= 0) {
    text += " " + std::to_string(e.count) + " " + dtype_name(e.dtype);
  } else if (e.type[0] != '\0') {
    text += " of " + readable_type_name(e.type);  // kept mangled (no allocation per call), read demangled
  }
  if (e.reduce >= 0) text += std::string(" ") + reduce_name(e.reduce);
  if (e.root >= 0) text += " root " + std::to_string(e.root);
  return text;
}

void watch_group(Context& ctx, Group& group) {
  if (ctx.recorder)
    group.progress_slot = ctx.recorder->track(group.key, group.name, group.world_ranks, group.topology.rank);
}

void unwatch_group(Context& ctx, std::uint64_t key) noexcept {
  if (ctx.recorder) ctx.recorder->untrack(key);
}

}  // namespace mpidist::detail
