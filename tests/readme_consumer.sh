#!/bin/sh
# The README's "Use it in your project", taken out of README.md as a user copies it: the example
# (train.cpp), the consumer meson.build and the CMakeLists.txt, built against a staged
# `meson install` of BUILD_DIR and run under MPIEXEC -n 2; and the install command's options,
# which must configure mpidist without its tests and benchmarks. If the README drifts from what
# works, this fails.
#   readme_consumer.sh BUILD_DIR PREFIX SOURCE_ROOT MPIEXEC
set -eu
build=$1 prefix=$2 source_root=$3 mpiexec=$4
readme="$source_root/README.md"
work=$(mktemp -d /tmp/mpidist-readme.XXXXXX)
trap 'rm -rf "$work"' EXIT

# block LANG FIRST_LINE: the fenced ```LANG block of the README that begins with FIRST_LINE
# (the whole first block of LANG when FIRST_LINE is empty).
block() {
  awk -v lang="$1" -v first="$2" '
    !inside && $0 == "```" lang { inside = 1; n = 0; next }
    inside && $0 == "```" { if (n > 0 && (first == "" || index(text, first) == 1)) { printf "%s", text; exit }
                            inside = 0; text = ""; next }
    inside { text = text $0 "\n"; n++ }' "$readme"
}
mkdir "$work/meson" "$work/cmake"
block cpp "" >"$work/meson/train.cpp"
block meson "# meson.build of your project" >"$work/meson/meson.build"
block cmake "# CMakeLists.txt of your project" >"$work/cmake/CMakeLists.txt"
for f in meson/train.cpp meson/meson.build cmake/CMakeLists.txt; do
  [ -s "$work/$f" ] || { echo "FAIL: README.md has no block for $f"; exit 1; }
done
grep -q 'mpidist::Environment' "$work/meson/train.cpp" || { echo "FAIL: the first cpp block is not the example"; exit 1; }
cp "$work/meson/train.cpp" "$work/cmake/train.cpp"

# The install command's options (the line with "meson setup build --prefix" and its continuation):
# mpidist must configure with them, and configure neither its tests nor its benchmarks.
options=$(sed -n '/meson setup build --prefix/{N;p;}' "$readme" | grep -o -- ' -D[a-z_]*=[a-z]*' | tr -d '\n')
case "$options" in *-Dtests=disabled*-Dbenchmarks=disabled*) ;; *) echo "FAIL: no -Dtests/-Dbenchmarks=disabled in the README's install command: '$options'"; exit 1 ;; esac
# shellcheck disable=SC2086  # the options are words
meson setup "$work/lean" "$source_root" --prefix "$work/lean-prefix" $options >"$work/lean.log" 2>&1 ||
  { cat "$work/lean.log"; echo "FAIL: the README's install options do not configure mpidist"; exit 1; }
if meson introspect --targets "$work/lean" | grep -qE '"name": "(test_|mpidist-bench|bench_objects)'; then
  echo "FAIL: with the README's options mpidist still builds its tests or benchmarks"; exit 1
fi
echo "README install options configure mpidist without tests and benchmarks:$options"

# A staged install of the build; its pkg-config file pointed at the staging directory.
meson install -C "$build" --destdir "$work/stage" --no-rebuild >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; exit 1; }
root="$work/stage$prefix"
pc=$(find "$root" -name mpidist.pc | head -n 1)
[ -n "$pc" ] || { echo "FAIL: no mpidist.pc installed"; exit 1; }
sed -i "s|^prefix=.*|prefix=$root|" "$pc"
lib_dir=$(dirname "$(find "$root" -name 'libmpidist.so*' | head -n 1)")
export PKG_CONFIG_PATH="$(dirname "$pc")"

check_run() {  # check_run LABEL PROGRAM: the example's lines at 2 ranks
  output=$(LD_LIBRARY_PATH="$lib_dir" "$mpiexec" -n 2 "$2" 2>&1) || { echo "$output"; echo "FAIL: $1 did not run"; exit 1; }
  echo "$output"
  echo "$output" | grep -q "\[rank 0/2\] INFO train: 2 ranks on 1 node(s)" &&
    echo "$output" | grep -q "INFO train: linear: mean grad 0.5, worst loss 0.5" ||
    { echo "FAIL: $1: not the example's output"; exit 1; }
}

# The consumer meson.build, with the installed mpidist found through pkg-config.
meson setup "$work/meson/build" "$work/meson" --buildtype=plain >"$work/meson-setup.log" 2>&1 ||
  { cat "$work/meson-setup.log"; exit 1; }
grep -q "Run-time dependency mpidist found: YES" "$work/meson-setup.log" ||
  { cat "$work/meson-setup.log"; echo "FAIL: the README's meson.build did not find the installed mpidist"; exit 1; }
ninja -C "$work/meson/build" >"$work/meson-build.log" 2>&1 || { cat "$work/meson-build.log"; exit 1; }
check_run "the README's meson.build" "$work/meson/build/train"

# The CMake snippet, with find_package(mpidist CONFIG).
cmake -S "$work/cmake" -B "$work/cmake/build" -DCMAKE_PREFIX_PATH="$root" >"$work/cmake-configure.log" 2>&1 ||
  { cat "$work/cmake-configure.log"; exit 1; }
cmake --build "$work/cmake/build" >"$work/cmake-build.log" 2>&1 || { cat "$work/cmake-build.log"; exit 1; }
check_run "the README's CMakeLists.txt" "$work/cmake/build/train"
echo "README: the example, its meson.build and its CMakeLists.txt build against an install and run on 2 ranks"
