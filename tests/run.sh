#!/usr/bin/env bash
# The README's second command: set up, build and run the whole test suite against Open MPI
# (./build) and against MPICH (./build-mpich, or $MPIDIST_MPICH_BUILD_DIR; MPIDIST_MPICH=0 leaves
# it out), then one last line "N passed, N failed" counting the test cases of all. Extra arguments
# go to both `meson test` runs (e.g. --suite guards); the MPICH run has MPIDIST_VALIDATE=1 and
# MPIDIST_TIMEOUT=60 (see below). With MPIDIST_SANITIZE=1 the suite also runs under ASan/UBSan
# with validation and a short watchdog (tests/sanitize.sh), and the plain Open MPI run leaves
# those runs to it; with MPIDIST_FUZZ=1 the fuzz targets run for 60 s each (tests/fuzz/run.sh).
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
echo "== set-up (packages, the Open MPI build): $SECONDS s =="
mpidist_build_mpich=${MPIDIST_MPICH_BUILD_DIR:-$mpidist_root/build-mpich}
mpis=(openmpi)
if [ "${MPIDIST_MPICH:-1}" = 1 ]; then
  start=$SECONDS
  mpidist_configure "$mpidist_build_mpich" -Dmpi=mpich
  ninja -C "$mpidist_build_mpich"
  echo "== the MPICH build: $((SECONDS - start)) s =="
  mpis+=(mpich)
fi

sanitize=0
[ $# -eq 0 ] && [ "${MPIDIST_SANITIZE:-0}" = 1 ] && sanitize=1
status=0
for mpi in "${mpis[@]}"; do
  # The MPICH run doubles as the suite's run with every check on: each collective first agrees on
  # its arguments across ranks (MPIDIST_VALIDATE=1) under a short watchdog, which proves neither
  # raises a false alarm. The Open MPI run keeps the defaults. Tests that need a setting set it.
  build=$mpidist_build checks=()
  [ "$mpi" = mpich ] && build=$mpidist_build_mpich checks=(MPIDIST_VALIDATE=1 MPIDIST_TIMEOUT=60)
  tests=("$@")
  if [ "$mpi" = openmpi ] && [ $sanitize = 1 ]; then
    # The sanitizer stage runs the rest on Open MPI, instrumented, with every check on: not twice.
    mapfile -t all < <(mpidist_test_names "$build")
    mapfile -t tests < <(printf '%s\n' "${all[@]}" | "$mpidist_root/tests/sanitize.sh" --plain)
    echo "== openmpi: $((${#all[@]} - ${#tests[@]})) runs left to the sanitizer stage; these ${#tests[@]} run here =="
  fi
  echo "== $mpi: ${checks[*]:+${checks[*]} }meson test -C $build =="
  start=$SECONDS
  env "${checks[@]}" meson test -C "$build" --print-errorlogs "${tests[@]}" || status=$?
  echo "== $mpi: $((SECONDS - start)) s =="
done
logs=("openmpi=$mpidist_build/meson-logs")
[ "${#mpis[@]}" -gt 1 ] && logs+=("mpich=$mpidist_build_mpich/meson-logs")
if [ $sanitize = 1 ]; then
  start=$SECONDS
  "$mpidist_root/tests/sanitize.sh" || status=$((status ? status : 1))
  echo "== sanitize: $((SECONDS - start)) s =="
  logs+=("sanitize=${MPIDIST_SANITIZE_BUILD_DIR:-$mpidist_root/build-sanitize}/meson-logs")
fi
if [ $# -eq 0 ] && [ "${MPIDIST_FUZZ:-0}" = 1 ]; then
  start=$SECONDS
  "$mpidist_root/tests/fuzz/run.sh" || status=$((status ? status : 1))
  echo "== fuzz: $((SECONDS - start)) s =="
  logs+=("fuzz=${MPIDIST_FUZZ_BUILD_DIR:-$mpidist_root/build-fuzz}/meson-logs")
fi
python3 "$mpidist_root/tests/summarize.py" "${logs[@]}" || status=$((status ? status : 1))
exit "$status"
