#!/bin/sh
# Builds tests/consumer against this source tree as a subproject (CUDA and NCCL disabled, so the
# build without them is covered too), runs it under mpiexec -n 2, and checks what it linked.
# MPI is the mpidist build's implementation (openmpi, mpich), handed to the subproject as its mpi
# option; the consumer must link that MPI and run under its MPIEXEC.
#   check.sh SOURCE_ROOT MPI MPIEXEC
set -eu
source_root=$(cd "$1" && pwd)
mpi=$2 mpiexec=$3
work=$(mktemp -d /tmp/mpidist-consumer.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp "$source_root/tests/consumer/meson.build" "$source_root/tests/consumer/meson_options.txt" \
   "$source_root/tests/consumer/consumer.cpp" "$work/"
mkdir "$work/subprojects"
ln -s "$source_root" "$work/subprojects/mpidist"

# buildtype plain (no optimization, no debug information): what is checked is that it builds,
# links and runs, and compiling the library takes half the time this way.
meson setup "$work/build" "$work" --buildtype=plain -Dmpi="$mpi" -Dmpidist:cuda=disabled -Dmpidist:nccl=disabled \
  >"$work/setup.log" 2>&1 ||
  { cat "$work/setup.log"; exit 1; }
ninja -C "$work/build" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }

if find "$work/build/subprojects" -name 'test_*' -type f | grep -q .; then
  echo "FAIL: a subproject build must not build mpidist's tests"; exit 1
fi
if ldd "$work/build/consumer" | grep -E 'libcudart|libnccl'; then
  echo "FAIL: built with cuda=disabled nccl=disabled yet linked CUDA/NCCL"; exit 1
fi
case "$mpi" in
  mpich) mpi_library=libmpich ;;
  openmpi) mpi_library=libmpi\.so ;;
  *) mpi_library=. ;;
esac
ldd "$work/build/consumer" | grep -q "$mpi_library" ||
  { echo "FAIL: the consumer does not link $mpi's library ($mpi_library)"; ldd "$work/build/consumer"; exit 1; }
output=$("$mpiexec" -n 2 "$work/build/consumer" 2>&1)
echo "$output"
for r in 0 1; do
  echo "$output" | grep -q "\[rank $r/2\] consumer ok, 1 node(s)" || { echo "FAIL: no line from rank $r"; exit 1; }
done
echo "consumer built as a subproject without CUDA/NCCL and ran on 2 ranks"
