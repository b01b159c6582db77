#!/usr/bin/env bash
# Install what spinlab needs from Debian's packages, only when something is missing.
# Usage: scripts/deps.sh [all|slurm]   (all is the default; slurm: what `make test-slurm` adds,
# a one-node Slurm cluster's daemons, kept out of `make run` and `make test` on purpose)
set -euo pipefail

pkgs=(
  build-essential cmake make git
  clang lld llvm libclang-rt-14-dev          # freestanding kernel build checks, libFuzzer
  libgtest-dev libgmock-dev libbenchmark-dev  # host unit tests and benchmarks
  libboost-program-options-dev               # CLI and experiment specs
  qemu-system-x86 qemu-utils                 # the VM (qboot.rom ships in qemu-system-data)
  libvirt-daemon-system libvirt-clients      # spinlab-vm --backend libvirt (libvirtd, virsh)
  grub-pc-bin grub-common xorriso mtools     # the GRUB ISO
  python3 python3-matplotlib python3-numpy python3-pandas python3-pytest
  python3-scipy                              # analysis: t quantiles, Welch's test
  chromium                                   # analysis: the report's rendering test (headless)
  cpio util-linux procps psmisc
  snakemake                                  # spinlab-sweep: a matrix of runs, locally or on Slurm
  help2man man-db bash-completion            # man pages from --help (build), man, completion
  strace                                     # the install test: nothing reads the source tree
  babeltrace2 python3-bt2                    # trace export: CTF read back (tests), trace analysis
  libdw-dev pkg-config                       # trace dump --stacks: guest addresses to names (elfutils)
)
if [ "${1:-all}" = slurm ]; then
  pkgs=(slurm-wlm munge)                     # slurmctld, slurmd, sbatch...; munged
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
