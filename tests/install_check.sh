#!/bin/sh
# Installs the build into a staging directory, then builds a program against the installed headers
# through pkg-config (mpidist.pc), runs it under mpiexec -n 2, and checks that the installed library
# finds the real cudart/NCCL it was built against.
#   install_check.sh BUILD_DIR PREFIX LIBDIR SOURCE_ROOT MPICXX MPIEXEC
set -eu
build=$1 prefix=$2 libdir=$3 source_root=$4 mpicxx=$5 mpiexec=$6
stage=$(mktemp -d /tmp/mpidist-install.XXXXXX)
trap 'rm -rf "$stage"' EXIT
meson install -C "$build" --destdir "$stage" --no-rebuild >"$stage/install.log" 2>&1 || { cat "$stage/install.log"; exit 1; }
root="$stage$prefix"
case "$libdir" in /*) lib="$stage$libdir" ;; *) lib="$root/$libdir" ;; esac
export PKG_CONFIG_PATH="$lib/pkgconfig"
flags=$(pkg-config --define-variable=prefix="$root" --cflags --libs mpidist)
# The .pc file names the MPI it needs (Requires.private); link it like any MPI program.
"$mpicxx" -std=c++20 "$source_root/tests/consumer/consumer.cpp" $flags -o "$stage/consumer"
output=$(LD_LIBRARY_PATH="$lib" "$mpiexec" -n 2 "$stage/consumer" 2>&1)
echo "$output"
echo "$output" | grep -q "\[rank 1/2\] consumer ok" || { echo "FAIL: installed consumer did not run"; exit 1; }
for name in libcudart libnccl; do
  if readelf -d "$lib/libmpidist.so" | grep -q "NEEDED.*$name"; then
    ldd "$lib/libmpidist.so" | grep "$name" | grep -v "not found" ||
      { echo "FAIL: installed libmpidist cannot find $name"; ldd "$lib/libmpidist.so"; exit 1; }
  fi
done
if ldd "$lib/libmpidist.so" | grep -q 'libcuda\.so'; then echo "FAIL: links the CUDA driver"; exit 1; fi
echo "installed headers, library and mpidist.pc work"
