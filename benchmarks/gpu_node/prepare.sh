#!/usr/bin/env bash
# Here, before a run on a lent GPU node: builds what benchmarks/gpu_node/*.sh carry there, in this
# checkout's root (both folders ignored through .git/info/exclude):
#   .device-bundle/  the device kit's bundle of the checked-out tree, uncommitted work too
#                    ($KIT_DIR/make-bundle.sh; KIT_DIR defaults to ../shared/device)
#   .device-extra/   bin/: the kit build's suites and probes that the bundle leaves out;
#                    iproute/: this machine's `ip` and the libraries it needs beyond glibc
# Then, with the device tool: run command "bash benchmarks/gpu_node/targets.sh" (or a script of
# your own that sources benchmarks/gpu_node/prologue.sh), carry [".device-bundle", ".device-extra"].
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
kit=${KIT_DIR:-../shared/device}
[ -f "$kit/make-bundle.sh" ] || { echo "prepare.sh: no device kit at $kit (set KIT_DIR)" >&2; exit 1; }
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
for dir in /.device-bundle/ /.device-extra/; do
  grep -qxF "$dir" "$exclude" 2>/dev/null || echo "$dir" >>"$exclude"
done
# The kit refuses a bundle inside the tree it copies: build it beside, then move it in.
rm -rf /tmp/device-bundle
bash "$kit/make-bundle.sh" . /tmp/device-bundle
rm -rf .device-bundle .device-extra
cp -r /tmp/device-bundle .device-bundle
mkdir -p .device-extra/bin .device-extra/iproute/lib
build=/tmp/kit/build  # where make-bundle.sh built the tree
for exe in test_uneven test_p2p test_async test_shm test_device_contract test_groups test_after_error \
           test_faults after_error_probe fault_probe; do
  cp "$build/tests/$exe" .device-extra/bin/
done
cp "$build/benchmarks/call_cost" .device-extra/bin/
ip=$(command -v ip)
cp "$ip" .device-extra/iproute/ip
ldd "$ip" | awk '$3 ~ /^\// {print $3}' | grep -v -e '/libc\.so' -e '/ld-linux' | xargs -r cp -L -t .device-extra/iproute/lib/
du -sh .device-bundle .device-extra
echo "prepare.sh: ready; carry [\".device-bundle\", \".device-extra\"]"
