// Rank-prefixed messages and a small logger that speaks on the main process only by default.
#pragma once

#include <iosfwd>
#include <sstream>
#include <string>
#include <string_view>

namespace mpidist {

/// "[rank 2/4] msg" (ignite's rank-prefixed log lines); just `msg` before initialization.
std::string rank_prefixed_message(std::string_view msg);

enum class LogLevel { Debug = 0, Info = 1, Warning = 2, Error = 3, Off = 4 };

/// The level named by MPIDIST_LOG_LEVEL (debug, info, warning, error, off; default info).
/// An unknown name falls back to info with a warning on stderr.
LogLevel log_level_from_env();

/// Writes `[rank r/n] LEVEL name: message` lines to stderr (std::cerr), or to the `out` given. By
/// default only the main process writes (`all_ranks = false`); messages below the level are
/// dropped without formatting.
class Logger {
 public:
  explicit Logger(std::string name = "mpidist", bool all_ranks = false);
  Logger(std::string name, bool all_ranks, LogLevel level, std::ostream& out);

  LogLevel level() const noexcept { return level_; }
  void set_level(LogLevel level) noexcept { level_ = level; }
  /// True when a message at `level` would be written by this rank.
  bool enabled(LogLevel level) const;

  /// Writes one line; the parts are streamed together (`log.info("step ", i, " loss ", loss)`).
  template <class... Parts>
  void log(LogLevel level, const Parts&... parts) const {
    if (!enabled(level)) return;
    std::ostringstream text;
    (text << ... << parts);
    write(level, text.str());
  }
  template <class... Parts> void debug(const Parts&... parts) const { log(LogLevel::Debug, parts...); }
  template <class... Parts> void info(const Parts&... parts) const { log(LogLevel::Info, parts...); }
  template <class... Parts> void warning(const Parts&... parts) const { log(LogLevel::Warning, parts...); }
  template <class... Parts> void error(const Parts&... parts) const { log(LogLevel::Error, parts...); }

 private:
  void write(LogLevel level, const std::string& message) const;
  std::string name_;
  bool all_ranks_;
  LogLevel level_;
  std::ostream* out_;
};

/// The library's default logger (name "mpidist", main process only, level from the environment).
Logger& logger();

}  // namespace mpidist
