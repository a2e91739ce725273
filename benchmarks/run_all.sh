#!/bin/sh
# Runs mpidist-bench for every op at one rank count and writes OUTDIR/<op>.json plus a plot of
# each tensor collective; the numbers in the README come from `benchmarks/run_all.sh 2 out`.
#   usage: benchmarks/run_all.sh RANKS OUTDIR [extra mpidist-bench flags]
#   env:   MPIDIST_BENCH (default build/benchmarks/mpidist-bench), MPIEXEC (default "mpiexec -n"),
#          PYTHON (default /usr/bin/python3 when it has matplotlib, else python3)
set -eu
ranks=${1:?usage: run_all.sh RANKS OUTDIR [flags]}
out=${2:?usage: run_all.sh RANKS OUTDIR [flags]}
shift 2
bench=${MPIDIST_BENCH:-build/benchmarks/mpidist-bench}
launcher=${MPIEXEC:-mpiexec -n}
here=$(dirname "$0")
mkdir -p "$out"
status=0
for op in all_reduce broadcast all_gather reduce_scatter reduce barrier object_broadcast object_all_gather; do
  case $op in
    all_reduce) sizes="-b 4 -e 256M -f 4" ;;
    object_*) sizes="-b 16 -e 16M -f 4" ;;
    *) sizes="-b 16 -e 64M -f 4" ;;
  esac
  # shellcheck disable=SC2086 # word splitting of $launcher, $sizes and "$@" is intended
  $launcher "$ranks" "$bench" $op $sizes --json "$out/$op.json" "$@" || status=1
done
python=${PYTHON:-python3}
if [ -z "${PYTHON:-}" ] && /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then python=/usr/bin/python3; fi
if "$python" -c 'import matplotlib' 2>/dev/null; then
  for op in all_reduce broadcast all_gather reduce_scatter reduce; do
    "$python" "$here/plot" "$out/$op.json" -o "$out/bench-$op.png"
  done
else
  echo "run_all.sh: no matplotlib for $python; skipping the plots" >&2
fi
exit $status
