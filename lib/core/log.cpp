// The rank-prefixed log and its levels.
#include "mpidist/log.hpp"

#include <cstdlib>
#include <iostream>
#include <mutex>

#include "core/context.hpp"
#include "core/rank_prefix.hpp"

namespace mpidist {

namespace detail {
std::string rank_prefix() {
  const auto* ctx = context_if_initialized();
  if (ctx == nullptr) return "";
  return "[rank " + std::to_string(ctx->topology.rank) + "/" + std::to_string(ctx->topology.world_size) + "] ";
}
}  // namespace detail

std::string rank_prefixed_message(std::string_view msg) { return detail::rank_prefix() + std::string(msg); }

LogLevel log_level_from_env() {
  const char* text = std::getenv("MPIDIST_LOG_LEVEL");
  if (text == nullptr || *text == '\0') return LogLevel::Info;
  const std::string name(text);
  if (name == "debug" || name == "DEBUG") return LogLevel::Debug;
  if (name == "info" || name == "INFO") return LogLevel::Info;
  if (name == "warning" || name == "WARNING" || name == "warn") return LogLevel::Warning;
  if (name == "error" || name == "ERROR") return LogLevel::Error;
  if (name == "off" || name == "OFF" || name == "none") return LogLevel::Off;
  std::cerr << "mpidist: MPIDIST_LOG_LEVEL='" << name << "' is not one of debug, info, warning, error, off; using info\n";
  return LogLevel::Info;
}

Logger::Logger(std::string name, bool all_ranks) : Logger(std::move(name), all_ranks, log_level_from_env(), std::cerr) {}

Logger::Logger(std::string name, bool all_ranks, LogLevel level, std::ostream& out)
    : name_(std::move(name)), all_ranks_(all_ranks), level_(level), out_(&out) {}

bool Logger::enabled(LogLevel level) const {
  if (level < level_ || level == LogLevel::Off) return false;
  const auto* ctx = detail::context_if_initialized();
  return all_ranks_ || ctx == nullptr || ctx->topology.rank == 0;
}

void Logger::write(LogLevel level, const std::string& message) const {
  static constexpr const char* names[] = {"DEBUG", "INFO", "WARNING", "ERROR"};
  // One write per line, so lines of ranks sharing a terminal do not interleave mid-line.
  const std::string line = detail::rank_prefix() + names[static_cast<int>(level)] + ' ' + name_ + ": " + message + '\n';
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  out_->write(line.data(), static_cast<std::streamsize>(line.size()));
  out_->flush();
}

Logger& logger() {
  static Logger instance;
  return instance;
}

}  // namespace mpidist
