#!/usr/bin/env bash
# The README's second command: set up, build and run the whole test suite, then print one line
# "N passed, N failed" counting test cases. Extra arguments go to `meson test` (e.g. --suite guards).
# Without arguments (CI), the suite also runs once more under ASan/UBSan with validation and a short
# watchdog (tests/sanitize.sh), and the fuzz targets run (tests/fuzz/run.sh); the last line counts
# all of them. MPIDIST_SKIP_SANITIZE=1 and MPIDIST_SKIP_FUZZ=1 leave those out.
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
status=0
meson test -C "$mpidist_build" --print-errorlogs "$@" || status=$?
logs=("$mpidist_build/meson-logs")
if [ $# -eq 0 ] && [ "${MPIDIST_SKIP_SANITIZE:-0}" != 1 ]; then
  "$mpidist_root/tests/sanitize.sh" || status=$((status ? status : 1))
  logs+=("${MPIDIST_SANITIZE_BUILD_DIR:-$mpidist_root/build-sanitize}/meson-logs")
fi
if [ $# -eq 0 ] && [ "${MPIDIST_SKIP_FUZZ:-0}" != 1 ]; then
  "$mpidist_root/tests/fuzz/run.sh" || status=$((status ? status : 1))
  logs+=("${MPIDIST_FUZZ_BUILD_DIR:-$mpidist_root/build-fuzz}/meson-logs")
fi
python3 "$mpidist_root/tests/summarize.py" "${logs[@]}" || status=$((status ? status : 1))
exit "$status"
