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
#   make run             the default experiment and its report; builds only the kernel, the initrd
#                        and the tools it runs (no test, no benchmark). RUN_SPEC=linux runs
#                        experiments/linux.ini instead: a Linux guest (Debian's kernel, fetched first)
#   make sweep SPEC=experiments/sweep-locks.ini   a matrix of runs through Snakemake (spinlab-sweep)
#   make test-slurm      the sweep's Slurm path on a one-node Slurm cluster started and stopped here
#   make install PREFIX=/usr/local [DESTDIR=/tmp/stage]   the `spinlab` command and everything it
#                        needs (see frontend/CMakeLists.txt); make uninstall removes exactly that
#   make soak SOAK_MIN=10   the soak: 4 vCPUs under changing host conditions and hostile channel
#                        frames, invariants checked every second; one line of figures at the end

BUILD := build
CPUS ?= 2
SUITE ?= all
ACCEL ?= auto
MEM ?= 256
APPEND ?=
FUZZ_SECONDS ?= 300
SPEC ?= experiments/sweep-locks.ini
RUN_SPEC ?= default
SOAK_MIN ?= 10
PY := /usr/bin/python3
INSTRUMENT ?= 1
KDIR := $(BUILD)/kernel$(if $(filter 0,$(INSTRUMENT)),-plain)$(if $(filter 2,$(INSTRUMENT)),-counters)
KERNEL := $(KDIR)/spinlab.elf
INITRD := $(KDIR)/initrd.tar
JOBS ?= 2
PREFIX ?= /usr/local
DESTDIR ?=
# The kernel's own make runs -j$(JOBS) unless this make already shares a jobserver with it.
KJOBS = $(if $(findstring jobserver,$(MAKEFLAGS)),,-j$(JOBS))
CONFIGURE = cmake -S . -B $(BUILD)/host -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPINLAB_KERNEL_DIR=$(abspath $(KDIR)) >/dev/null

.PHONY: all deps kernel host tools build test test-slurm selftest qemu iso bench fuzz run soak sweep install uninstall clean

all: build

# The package set: `make run` and `make install` install only what they use (scripts/deps.sh);
# a target-specific value reaches the prerequisites (kernel, tools) it builds.
DEPS_SET ?= all
install: DEPS_SET = install

deps:
	@scripts/deps.sh $(DEPS_SET)

kernel: deps
	@$(MAKE) --no-print-directory -s -C kernel-patch O=$(abspath $(KDIR)) INSTRUMENT=$(INSTRUMENT) $(KJOBS)

# everything CMake builds but the benchmarks (`make bench` and `make test` build them): tools, tests, man pages
host: deps
	@$(CONFIGURE)
	@cmake --build $(BUILD)/host -j$(JOBS)

# only what `make run` runs: spinlab-run, spinlab-collect, spinlab-load (and bin/spinlab)
tools: deps
	@$(CONFIGURE)
	@cmake --build $(BUILD)/host -j$(JOBS) --target spinlab-tools -- --no-print-directory

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
	@cmake --build $(BUILD)/host -j$(JOBS) --target spinlab-benchmarks -- --no-print-directory
	@scripts/bench.sh

fuzz: deps
	@scripts/fuzz.sh $(FUZZ_SECONDS)

# make run: the build's packages, then the build while the experiment's packages (QEMU, Python's)
# install beside it (on a fresh machine dpkg takes ~70 s of mostly one core; the build the other),
# then the experiment and its report.
run:
	@scripts/deps.sh build
	@scripts/deps.sh experiment & deps=$$!; \
	  built=0; $(MAKE) --no-print-directory kernel tools DEPS_SET=none || built=$$?; \
	  installed=0; wait $$deps || installed=$$?; \
	  if [ $$installed -ne 0 ]; then echo "make run: installing the experiment's packages failed (see above)" >&2; exit 1; fi; \
	  if [ $$built -ne 0 ]; then exit $$built; fi
	@RUN_SPEC=$(RUN_SPEC) scripts/run-default.sh

sweep: build
	@$(PY) experiments/sweep/spinlab-sweep $(SPEC)

test-slurm: build
	@SPINLAB_TEST_ONLY=slurm scripts/test-all.sh

install: kernel tools
	@cmake --build $(BUILD)/host -j$(JOBS) --target spinlab-man
	@DESTDIR="$(DESTDIR)" scripts/install.sh install $(BUILD)/host "$(PREFIX)"

uninstall:
	@DESTDIR="$(DESTDIR)" scripts/install.sh uninstall $(BUILD)/host "$(PREFIX)"

soak: build
	@$(BUILD)/host/bin/spinlab-soak --minutes $(SOAK_MIN) --kernel $(KERNEL) --initrd $(INITRD) \
	    --out $(BUILD)/soak

clean:
	rm -rf $(BUILD)
