#!/usr/bin/env bash
# Install what spinlab needs from Debian's packages, only when something is missing.
# Usage: scripts/deps.sh [run|build|experiment|install|all|bench|slurm|none]
#   run      what `make run` uses: build's and experiment's
#   build    what compiling the kernel and the tools needs (CMake's configure also wants
#            GoogleTest, Google Benchmark and help2man: small, and needed to configure the one
#            host build)
#   experiment  what running the default experiment and writing its report needs: QEMU, Python's
#            packages. `make run` installs these while the build compiles (dpkg keeps about one
#            core busy, the compilers the other)
#   install  run's, plus man-db and bash-completion for `make install`
#   all      (the default) everything `make test`, `make bench` (but bench's), `make fuzz` and the optional
#            features use: clang/libFuzzer, libvirt, the GRUB ISO, pytest, babeltrace2, chromium,
#            Snakemake
#   bench    what `make bench` adds to all (scripts/bench.sh installs it): LTTng-UST and
#            lttng-tools for the LTTng anchor (scripts/bench-lttng-anchor.sh), kept out of
#            `make test`, which does not use them
#   slurm    what `make test-slurm` adds, a one-node Slurm cluster's daemons, kept out of
#            `make run` and `make test` on purpose
#   none     nothing (a make that has installed its packages already)
# A feature outside `run` that finds its package missing names it (e.g. spinlab-vm --backend
# libvirt: libvirt-clients).
set -euo pipefail

build_pkgs=(
  build-essential cmake make git
  libgtest-dev libgmock-dev libbenchmark-dev  # CMake's configure (the tests and benchmarks)
  libboost-program-options-dev               # CLI and experiment specs
  help2man                                   # man pages from --help (CMake's configure wants it)
  libdw-dev pkg-config                       # trace dump --stacks: guest addresses to names (elfutils)
)
experiment_pkgs=(
  qemu-system-x86 qemu-utils                 # the VM (qboot.rom ships in qemu-system-data)
  python3 python3-matplotlib python3-numpy python3-pandas
  python3-scipy                              # analysis: t quantiles, Welch's test
  cpio util-linux procps psmisc
)
run_pkgs=("${build_pkgs[@]}" "${experiment_pkgs[@]}")
install_pkgs=(man-db bash-completion)        # man, completion
test_pkgs=(
  clang lld llvm libclang-rt-14-dev          # freestanding kernel build checks, libFuzzer
  libvirt-daemon-system libvirt-clients      # spinlab-vm --backend libvirt (libvirtd, virsh)
  grub-pc-bin grub-common xorriso mtools     # the GRUB ISO
  python3-pytest
  python3-pytest-xdist                       # make test: the analysis tests on both CPUs (-n 2)
  jupyter-nbconvert python3-ipykernel        # analysis/examples: the notebook runs in make test
  babeltrace2 python3-bt2                    # the CTF export's tests, lab 4: traces open in babeltrace2
  chromium                                   # analysis: the report's rendering test (headless)
  snakemake                                  # spinlab-sweep: a matrix of runs, locally or on Slurm
  strace                                     # the install test: nothing reads the source tree
  universal-ctags                            # make test: no C++ function over 80 lines (check-function-length.sh)
)
bench_pkgs=(
  liblttng-ust-dev lttng-tools               # the LTTng-UST anchor: a tracepoint provider, a session
)
case "${1:-all}" in
  run) pkgs=("${run_pkgs[@]}") ;;
  build) pkgs=("${build_pkgs[@]}") ;;
  experiment) pkgs=("${experiment_pkgs[@]}") ;;
  none) exit 0 ;;
  install) pkgs=("${run_pkgs[@]}" "${install_pkgs[@]}") ;;
  all) pkgs=("${run_pkgs[@]}" "${install_pkgs[@]}" "${test_pkgs[@]}") ;;
  bench) pkgs=("${bench_pkgs[@]}") ;;
  slurm) pkgs=(slurm-wlm munge) ;;            # slurmctld, slurmd, sbatch...; munged
  *) echo "deps.sh: unknown set '$1' (run, build, experiment, install, all, bench, slurm or none)" >&2; exit 2 ;;
esac

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
