# Sourced by the scripts that run jobs under a real launcher (tests/slurm, tests/hosts) and report
# TAP: a time budget, bounded jobs, and the checks both make of a job's output. The caller sets
# $tmp (its scratch directory) and calls tap_budget first.
count=0 failed=0
support=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# tap_budget SECONDS: the whole script's budget, kept under meson's timeout, so that the script, not
# meson, stops a stuck job and cleans up.
tap_budget() { deadline=$((SECONDS + $1)); }

bounded() {  # bounded SECONDS COMMAND...: in the background, so that a signal's trap runs at once
  local limit=$(($1 < deadline - SECONDS ? $1 : deadline - SECONDS))
  ((limit > 0)) || { echo "time budget spent" >&2; return 124; }
  timeout -k 5 "$limit" "${@:2}" &
  wait $!
}

tap() { count=$((count + 1)); [[ $1 == not* ]] && failed=1; echo "$1"; }
note() { sed 's/^/# /'; }

# tap_placement RC EXPECTED LABEL: mpidist-info --json in $tmp/out shows the EXPECTED placement
# (tests/support/check_placement.py's argument).
tap_placement() {
  note <"$tmp/out"; note <"$tmp/err"
  if (($1 == 0)) && python3 "$support/check_placement.py" "$2" <"$tmp/out" 2>&1 | note; then
    tap "ok - $3"
  else
    tap "not ok - $3 (exit $1)"
  fi
}

# tap_gtest RC NAME PREFIX: one TAP line per test of the GoogleTest report $tmp/NAME.xml, and a
# failure line if the job failed or wrote no report.
tap_gtest() {
  local lines
  if lines=$(python3 "$support/gtest_to_tap.py" "$tmp/$2.xml" "$3"); then
    while IFS= read -r line; do tap "$line"; done <<<"$lines"
  fi
  if (($1 != 0)) || [ -z "$lines" ]; then
    tap "not ok - $3 $2 exited with $1"
    tail -n 60 "$tmp/out" "$tmp/err" >&2
  fi
}

tap_end() { echo "1..$count"; exit "$failed"; }
