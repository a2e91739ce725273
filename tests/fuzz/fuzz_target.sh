#!/usr/bin/env bash
# Runs one libFuzzer target for FUZZ_SECONDS (default 60) from its seed corpus, writing new inputs
# to a scratch corpus (the repository's stays as committed). Non-zero on a crash, a leak, a
# sanitizer report, or an input that makes it allocate past -malloc_limit_mb; the reproducer is
# kept in the scratch directory it names.   fuzz_target.sh TARGET SEED_CORPUS
set -uo pipefail
target=$(realpath "$1") seeds=$(realpath "$2")
seconds=${FUZZ_SECONDS:-60}
scratch=$(mktemp -d "${TMPDIR:-/tmp}/mpidist-fuzz.XXXXXX")
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
cd "$scratch" || exit 1
mkdir corpus
"$target" -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=256 -max_len=16384 -timeout=10 \
  -print_final_stats=1 corpus "$seeds" >log 2>&1
status=$?
grep -E "^(#[0-9]+ +DONE|Done [0-9]+ runs|stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb)" log
if [ "$status" -ne 0 ]; then
  tail -60 log
  echo "$(basename "$target") FAILED (exit $status): reproducer and log in $scratch" >&2
  exit "$status"
fi
cd / && rm -rf "$scratch"
