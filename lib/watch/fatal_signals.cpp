// Signal handlers that dump the flight recorder before a rank dies.
#include "watch/fatal_signals.hpp"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>

#include "core/context.hpp"
#include "watch/flight_recorder.hpp"
#include "watch/job_end.hpp"
#include "watch/progress_board.hpp"
#include "watch/progress_record.hpp"
#include "watch/watchdog.hpp"

namespace mpidist::detail {
namespace {

constexpr std::array<int, 5> fatal{SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGTERM};
// The handlers chained to: process-wide by nature, like the signals themselves.
struct sigaction g_previous[fatal.size() + 1];
std::atomic<bool> g_installed{false};
// 0 before any fatal signal, 1 while the first one's report is written, 2 after it.
std::atomic<int> g_handling{0};

const char* signal_name(int signal) noexcept {
  switch (signal) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGTERM: return "SIGTERM";
    default: return "a signal";
  }
}

std::size_t index_of(int signal) noexcept {
  for (std::size_t i = 0; i < fatal.size(); ++i)
    if (fatal[i] == signal) return i;
  return fatal.size();
}

// One line about the call in flight, formatted on the stack (no heap in a signal handler).
void say_what_was_in_flight(Context& ctx, int signal) noexcept {
  auto& record = ctx.recorder->record();
  const auto& h = record.header;
  const auto call = read_entry(record, h.current.load(std::memory_order_acquire));
  char line[512];
  int n = 0;
  if (call.valid && call.state == CallState::Started) {
    const CommDescriptor* comm = ctx.recorder->find(call.comm_key);
    char seq[32] = "";  // point-to-point calls have none
    if (call.seq > 0) std::snprintf(seq, sizeof seq, " #%llu", static_cast<unsigned long long>(call.seq));
    n = std::snprintf(line, sizeof line, "mpidist: [rank %d on %s] %s: in flight: %s%s on %s (%llu elements) for %.1f s",
                      h.world_rank, h.host, signal_name(signal), call.op, seq,
                      comm ? comm->name.c_str() : "?", static_cast<unsigned long long>(call.count),
                      static_cast<double>(steady_now_ns() - call.start_ns) / 1e9);
  } else {
    n = std::snprintf(line, sizeof line, "mpidist: [rank %d on %s] %s: no collective in flight", h.world_rank, h.host,
                      signal_name(signal));
  }
  const bool dumped = ctx.recorder->dump(signal == SIGTERM ? "signal SIGTERM" : signal_name(signal), line);
  if (n > 0 && static_cast<std::size_t>(n) < sizeof line) {
    const std::string& path = ctx.recorder->dump_path();
    n += std::snprintf(line + n, sizeof line - static_cast<std::size_t>(n), "%s%s\n",
                       dumped ? "; flight recorder: " : "", dumped ? path.c_str() : "");
    if (static_cast<std::size_t>(n) >= sizeof line) n = sizeof line - 1;
    [[maybe_unused]] auto written = ::write(STDERR_FILENO, line, static_cast<std::size_t>(n));
  }
}

// Whether `info`'s signal came from a host peer ending the job (job_end.cpp: its report is out,
// and it collects every other rank's before its abort), not from the launcher.
bool sent_by_peer_ending_the_job(const Context& ctx, const siginfo_t* info) noexcept {
  if (info == nullptr || info->si_code != SI_USER || !ctx.board) return false;
  for (const int rank : ctx.board->host_ranks()) {
    const RankRecord* peer = ctx.board->peer(rank);
    if (peer != nullptr && peer->header.pid.load() == static_cast<std::uint64_t>(info->si_pid) &&
        peer->header.reported.load(std::memory_order_acquire) == report_out)
      return true;
  }
  return false;
}

void on_fatal(int signal, siginfo_t* info, void* context) {
  // The first fatal signal reports; a second one (a crash while reporting) goes straight through.
  // A SIGTERM that arrives while that report is being written is dropped: host peers ending the
  // job each send one, and one delivered to another thread of this process would cut the first
  // one's dump short; the first handler goes on to end the process itself.
  int state = 0;
  if (g_handling.compare_exchange_strong(state, 1)) {
    Context* ctx = context_if_initialized();
    if (ctx != nullptr && ctx->recorder) {
      // The watchdog reported and may be writing its dump as the launcher's SIGTERM arrives: let it finish.
      auto& reported = ctx->recorder->record().header.reported;
      const bool reporting = reported.load() != 0;
      if (reporting) ctx->recorder->await_dump();
      else say_what_was_in_flight(*ctx, signal);
      // Said and dumped: a host peer ending the job (job_end.cpp) need not wait for this rank.
      if (signal == SIGTERM) reported.store(report_out, std::memory_order_release);
      if (signal == SIGTERM && !reporting && sent_by_peer_ending_the_job(*ctx, info))
        await_host_peers_answers(*ctx);
    }
    g_handling.store(2);
  } else if (state == 1 && signal == SIGTERM) {
    return;
  }
  const auto& previous = g_previous[index_of(signal)];
  if ((previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction != nullptr) {
    previous.sa_sigaction(signal, info, context);
    return;
  }
  if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN && previous.sa_handler != nullptr) {
    previous.sa_handler(signal);
    return;
  }
  // Die as asked: the default action, with the signal's own exit status.
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

void on_dump_request(int) {
  if (Context* ctx = context_if_initialized(); ctx != nullptr && ctx->watchdog) ctx->watchdog->request_dump();
}

}  // namespace

void install_signal_handlers() noexcept {
  if (g_installed.exchange(true)) return;
  struct sigaction action {};
  action.sa_sigaction = on_fatal;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  for (std::size_t i = 0; i < fatal.size(); ++i) sigaction(fatal[i], &action, &g_previous[i]);
  struct sigaction dump {};
  dump.sa_handler = on_dump_request;
  dump.sa_flags = SA_RESTART;
  sigemptyset(&dump.sa_mask);
  sigaction(SIGUSR1, &dump, &g_previous[fatal.size()]);
}

void remove_signal_handlers() noexcept {
  if (!g_installed.exchange(false)) return;
  for (std::size_t i = 0; i < fatal.size(); ++i) sigaction(fatal[i], &g_previous[i], nullptr);
  sigaction(SIGUSR1, &g_previous[fatal.size()], nullptr);
  g_handling.store(0);
}

}  // namespace mpidist::detail
