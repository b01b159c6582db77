# spinlab: the two commands are `make run` and `make test` (see README.md).
# Every target installs what it needs from Debian's packages first (scripts/deps.sh).
#
#   make                 build the kernel (build/kernel/spinlab.elf) and the host tools (build/host)
#   make test            every test: host unit tests (ctest), analysis (pytest), in-guest
#                        self-tests at 1, 2, 4 and 8 vCPUs, once under KVM where /dev/kvm works
#   make selftest CPUS=4 SUITE=sched   boot under QEMU and run in-guest self-tests
#   make kernel INSTRUMENT=0   the baseline kernel without lock instrumentation (build/kernel-plain;
#                        2 = counters only, build/kernel-counters; 1 = full, the default)
#   make qemu CPUS=2     boot interactively (serial console on this terminal; Ctrl-A X quits)
#   make iso             GRUB ISO of the same kernel (build/spinlab.iso)
#   make bench           benchmarks, JSON into build/bench/
#   make fuzz            the libFuzzer targets for longer (FUZZ_SECONDS=300)
#   make run             the default experiment and its report
#   make sweep SPEC=experiments/sweep-locks.ini   a matrix of runs through Snakemake (spinlab-sweep)
#   make test-slurm      the sweep's Slurm path on a one-node Slurm cluster started and stopped here

BUILD := build
CPUS ?= 2
SUITE ?= all
ACCEL ?= auto
MEM ?= 256
APPEND ?=
FUZZ_SECONDS ?= 300
SPEC ?= experiments/sweep-locks.ini
PY := /usr/bin/python3
INSTRUMENT ?= 1
KDIR := $(BUILD)/kernel$(if $(filter 0,$(INSTRUMENT)),-plain)$(if $(filter 2,$(INSTRUMENT)),-counters)
KERNEL := $(KDIR)/spinlab.elf
INITRD := $(KDIR)/initrd.tar
JOBS ?= 2

.PHONY: all deps kernel host build test test-slurm selftest qemu iso bench fuzz run sweep clean

all: build

deps:
	@scripts/deps.sh

kernel: deps
	@$(MAKE) --no-print-directory -s -C kernel-patch O=$(abspath $(KDIR)) INSTRUMENT=$(INSTRUMENT)

host: deps
	@cmake -S . -B $(BUILD)/host -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD)/host -j$(JOBS)

build: kernel host

test: build
	@scripts/test-all.sh

selftest: kernel
	@$(PY) vm-images/selftest.py --kernel $(KERNEL) --initrd $(INITRD) --cpus $(CPUS) --suite $(SUITE) \
	    --accel $(ACCEL) --memory $(MEM) $(if $(APPEND),--append '$(APPEND)')

qemu: kernel
	@$(PY) vm-images/qemu_interactive.py --kernel $(KERNEL) --initrd $(INITRD) --cpus $(CPUS) --accel $(ACCEL) \
	    --memory $(MEM) $(if $(APPEND),--append '$(APPEND)')

iso: kernel
	@vm-images/make-iso.sh $(KERNEL) $(BUILD)/spinlab.iso --initrd $(INITRD) $(APPEND)

bench: build
	@scripts/bench.sh

fuzz: deps
	@scripts/fuzz.sh $(FUZZ_SECONDS)

run: build
	@scripts/run-default.sh

sweep: build
	@$(PY) experiments/sweep/spinlab-sweep $(SPEC)

test-slurm: build
	@SPINLAB_TEST_ONLY=slurm scripts/test-all.sh

clean:
	rm -rf $(BUILD)
