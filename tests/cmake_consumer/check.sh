#!/bin/sh
# Stages `meson install` of BUILD_DIR in a temporary directory, configures tests/cmake_consumer
# with find_package(mpidist CONFIG REQUIRED) against it, builds it, runs it under MPIEXEC -n 2 and
# checks its output and the MPI it linked. Then checks that the package refuses another MPI (the
# wrapper OTHER_MPICXX, where one is installed) instead of mixing two.
#   check.sh BUILD_DIR PREFIX SOURCE_ROOT MPI MPIEXEC [OTHER_MPICXX]
set -eu
build=$1 prefix=$2 source_root=$3 mpi=$4 mpiexec=$5 other_mpicxx=${6:-}
work=$(mktemp -d /tmp/mpidist-cmake.XXXXXX)
trap 'rm -rf "$work"' EXIT
meson install -C "$build" --destdir "$work/stage" --no-rebuild >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; exit 1; }
root="$work/stage$prefix"
config=$(find "$root" -path '*/cmake/mpidist/mpidistConfig.cmake')
[ -n "$config" ] || { echo "FAIL: no lib/cmake/mpidist/mpidistConfig.cmake installed"; exit 1; }
[ -f "$(dirname "$config")/mpidistConfigVersion.cmake" ] || { echo "FAIL: no mpidistConfigVersion.cmake"; exit 1; }
echo "installed $config"

cmake -S "$source_root/tests/cmake_consumer" -B "$work/build" -DCMAKE_PREFIX_PATH="$root" \
      -DCMAKE_BUILD_TYPE=Release >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }

case "$mpi" in
  mpich) mpi_library=libmpich ;;
  openmpi) mpi_library='libmpi\.so' ;;
  *) mpi_library=. ;;
esac
lib_dir=$(dirname "$(find "$root" -name 'libmpidist.so*' | head -n 1)")
LD_LIBRARY_PATH="$lib_dir" ldd "$work/build/cmake_consumer" | grep -q "$mpi_library" ||
  { echo "FAIL: the CMake consumer does not link $mpi's library"; ldd "$work/build/cmake_consumer"; exit 1; }
output=$(LD_LIBRARY_PATH="$lib_dir" "$mpiexec" -n 2 "$work/build/cmake_consumer" 2>&1)
echo "$output"
for r in 0 1; do
  echo "$output" | grep -q "\[rank $r/2\] cmake consumer ok, size 2, sum 3" ||
    { echo "FAIL: no correct line from rank $r"; exit 1; }
done

if [ -n "$other_mpicxx" ] && [ -x "$other_mpicxx" ]; then
  if cmake -S "$source_root/tests/cmake_consumer" -B "$work/other" -DCMAKE_PREFIX_PATH="$root" \
        -DMPI_CXX_COMPILER="$other_mpicxx" >"$work/other.log" 2>&1; then
    echo "FAIL: find_package(mpidist) accepted the MPI of $other_mpicxx"; exit 1
  fi
  grep -q "mpidist was built with $mpi, but FindMPI found another MPI" "$work/other.log" ||
    { cat "$work/other.log"; echo "FAIL: no message naming the MPI mismatch"; exit 1; }
  echo "find_package(mpidist) refuses the MPI of $other_mpicxx"
fi
echo "CMake consumer: find_package(mpidist CONFIG) built, linked $mpi and ran on 2 ranks"
