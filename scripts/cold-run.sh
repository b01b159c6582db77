#!/usr/bin/env bash
# How long a first `make run` takes on a fresh Debian 12: a new minbase chroot (nothing of
# spinlab's packages), a fresh clone of this checkout's HEAD, `make run` in it, every output line
# stamped with the seconds since make run started. Read the parts off the log: the build's
# packages ("deps: installing build-essential ..."), the build, the experiment ("spinlab-run: VM
# ..." to "complete"), the report ("report: ...").
#
#   sudo scripts/cold-run.sh [BASE]     BASE: a debootstrapped Debian 12 kept between measurements
#                                       (default /var/tmp/spinlab-bookworm; made when missing,
#                                       with the debootstrap package)
#
# Each measurement runs in a copy of BASE (BASE.run, removed after). Needs root, the network to
# Debian's mirror, and a quiet machine: other work on the CPUs shows in the times. Writes
# build/cold-run.log. The machine's /dev/kvm is not used: the default spec runs under TCG when
# the CPU has no vmx/svm, as here.
set -euo pipefail
top=$(git rev-parse --show-toplevel)
base=${1:-/var/tmp/spinlab-bookworm}
run=$base.run
log=$top/build/cold-run.log
[ "$(id -u)" -eq 0 ] || { echo "cold-run.sh: needs root (chroot, mounts)" >&2; exit 2; }
if [ ! -d "$base" ]; then
    command -v debootstrap >/dev/null || { echo "cold-run.sh: needs debootstrap (apt-get install debootstrap)" >&2; exit 2; }
    echo "cold-run.sh: making $base (debootstrap --variant=minbase bookworm)" >&2
    debootstrap --variant=minbase bookworm "$base" http://deb.debian.org/debian >/dev/null
fi
mounts=(proc sys dev dev/pts)
cleanup() {
    # -R: what was mounted below them inside (spinlab-run mounts tracefs in the chroot's /sys).
    # Nothing is deleted while anything is still mounted below $run: rm -rf would reach the
    # host's /dev and /sys through the bind mounts.
    for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -R "$run/${mounts[i]}" 2>/dev/null || true; done
    if findmnt -rn -o TARGET | grep -q "^$run/"; then
        echo "cold-run.sh: still mounted below $run, not removed: umount -R them, then rm -rf $run" >&2
        return
    fi
    rm -rf "$run"
}
trap cleanup EXIT INT TERM
if findmnt -rn -o TARGET | grep -q "^$run/"; then
    echo "cold-run.sh: something is mounted below $run (an earlier run?): umount -R it first" >&2; trap - EXIT; exit 1
fi
rm -rf "$run" && cp -a "$base" "$run"
cp /etc/resolv.conf "$run/etc/resolv.conf"
for m in "${mounts[@]}"; do mount --bind "/$m" "$run/$m"; done
git clone -q "$top" "$run/root/spinlab"
mkdir -p "$top/build"
echo "cold-run.sh: make run in a fresh Debian 12 ($run), log $log" >&2
chroot "$run" /bin/bash -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends make >/dev/null 2>&1 &&
    cd /root/spinlab && SECONDS=0 && { make run 2>&1; echo "make run exit status $?"; } |
    while IFS= read -r l; do printf "%4d %s\n" "$SECONDS" "$l"; done' >"$log" 2>&1
grep -E "^ *[0-9]+ (deps: |spinlab-run: VM|spinlab-run: complete|report: |make run exit)" "$log"
