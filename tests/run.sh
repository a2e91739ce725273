#!/usr/bin/env bash
# The README's second command: set up, build and run the whole test suite, then print one line
# "N passed, N failed" counting test cases. Extra arguments go to `meson test` (e.g. --suite guards).
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
status=0
meson test -C "$mpidist_build" --print-errorlogs "$@" || status=$?
python3 "$mpidist_root/tests/summarize.py" "$mpidist_build/meson-logs" || status=$((status ? status : 1))
exit "$status"
