// Signals that end (or inspect) a rank: SIGSEGV, SIGABRT, SIGBUS, SIGFPE and SIGTERM (what the
// launcher sends the survivors when a rank dies) dump the flight recorder and say what was in
// flight, then let the signal do what it would have done; SIGUSR1 dumps and goes on. Internal.
#pragma once

namespace mpidist::detail {

/// Installs the handlers (the previous ones are kept and chained to).
void install_signal_handlers() noexcept;
/// Restores the handlers that were there before.
void remove_signal_handlers() noexcept;

}  // namespace mpidist::detail
