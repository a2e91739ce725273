// The default of MPIDIST_STALL_WARN, and the hook a test uses to shorten it. Internal; the
// setting is read in lib/core/settings.cpp and acted on by the watchdog (lib/watch/watchdog.cpp).
#pragma once

namespace mpidist::detail {

/// Seconds a collective waits before the stall warning names who is missing, with
/// MPIDIST_STALL_WARN unset: 60, as Horovod's stall inspector.
inline constexpr double stall_warn_default_seconds = 60.0;

/// The default in force: stall_warn_default_seconds unless a test shortened it.
double default_stall_warn_seconds() noexcept;

/// Replaces the default for jobs initialized after this call, so a test sees the warning of an
/// unset MPIDIST_STALL_WARN in seconds instead of a minute; 0 restores the real default.
void set_default_stall_warn_seconds_for_testing(double seconds) noexcept;

}  // namespace mpidist::detail
