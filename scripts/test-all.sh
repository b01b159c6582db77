#!/usr/bin/env bash
# Runs every test of spinlab (called by `make test` after the build). Each step prints its own
# runner's summary (ctest, pytest, the self-test harness); the last line counts the steps:
# "steps: N passed, N failed". Exits non-zero when any step failed.
set -uo pipefail
cd "$(dirname "$0")/.."

PY=/usr/bin/python3
KERNEL=build/kernel/spinlab.elf
INITRD=build/kernel/initrd.tar
passed=0
failed=0
failed_names=()

step() {
    local name=$1
    shift
    echo
    echo "=== $name"
    local t0=$SECONDS
    if "$@"; then
        passed=$((passed + 1))
        echo "=== $name: ok ($((SECONDS - t0)) s)"
    else
        failed=$((failed + 1))
        failed_names+=("$name")
        echo "=== $name: FAILED ($((SECONDS - t0)) s)"
    fi
}

pytest_dir() {  # pytest exits 5 when it collects nothing: that is a failure here too
    (cd "$1" && $PY -m pytest -q -p no:cacheprovider)
}

# The sweep's Slurm path starts a one-node Slurm cluster (Debian's slurm-wlm and munge, installed
# only for this): alone in `make test-slurm`, and last in `make test` when SPINLAB_TEST_SLURM=1
# (.ci/run sets it).
slurm_step() {
    scripts/deps.sh slurm && pytest_dir experiments/sweep/slurm_tests
}
if [ "${SPINLAB_TEST_ONLY:-}" = slurm ]; then  # make test-slurm
    step "experiment sweep on a one-node Slurm cluster (pytest)" slurm_step
    echo "steps: $passed passed, $failed failed"
    [ $failed -eq 0 ]
    exit
fi

step "host unit tests (ctest)" ctest --test-dir build/host --output-on-failure -j2 --timeout 300
step "analysis (pytest)" pytest_dir analysis
step "vm-images (pytest)" pytest_dir vm-images
step "collector against the real guest (pytest)" pytest_dir collector/tests
step "experiment sweeps through Snakemake (pytest)" pytest_dir experiments/sweep/tests
step "spinlab front-end (pytest)" pytest_dir frontend/tests
# make install into a temporary DESTDIR, the installed tools from elsewhere with the source tree
# hidden (selftest, a 10 s run, the report), make uninstall: about 1.5 min
step "make install: installed spinlab runs without the source tree" scripts/install-test.sh
for n in 1 2 4 8; do
    step "in-guest self-tests, $n vCPUs (TCG)" \
        $PY vm-images/selftest.py --kernel $KERNEL --initrd $INITRD --cpus $n --accel tcg --log build/selftest-$n.log
done
# The lock algorithm is fixed per boot: the lockstat suite (and the spinlock suite) once per
# algorithm at 4 vCPUs; then the baseline (INSTRUMENT=0) and counters-only (2) kernels, which
# must build from the same tree and pass the same suite.
for algo in tas ticket mcs pv; do
    step "lockstat self-tests, lock=$algo, 4 vCPUs (TCG)" \
        $PY vm-images/selftest.py --kernel $KERNEL --initrd $INITRD --cpus 4 --accel tcg \
        --suite lockstat,spinlock,user --append "lock=$algo" --log build/selftest-lockstat-$algo.log
done
for level in 0 2; do
    kdir=build/kernel-plain
    [ $level = 2 ] && kdir=build/kernel-counters
    step "INSTRUMENT=$level kernel builds and passes lockstat (4 vCPUs, lock=mcs)" \
        bash -c "make -s -C kernel-patch O=$PWD/$kdir INSTRUMENT=$level -j2 &&
                 $PY vm-images/selftest.py --kernel $kdir/spinlab.elf --cpus 4 --accel tcg \
                     --suite lockstat,spinlock --append lock=mcs --log build/selftest-i$level.log"
done
step "bad lock= value is refused" \
    $PY vm-images/selftest.py --kernel $KERNEL --accel tcg --append "lock=queued" --expect-boot-error lock
step "bad boot option is refused" \
    $PY vm-images/selftest.py --kernel $KERNEL --accel tcg --append "lokc=mcs" --expect-boot-error lokc
iso_selftest() {
    vm-images/make-iso.sh $KERNEL build/spinlab-selftest.iso --initrd $INITRD selftest=smp,spinlock,user &&
        $PY vm-images/selftest.py --kernel $KERNEL --iso build/spinlab-selftest.iso --cpus 2 --accel tcg
}
step "GRUB ISO boots and passes (SeaBIOS)" iso_selftest
if [ -x scripts/fuzz.sh ]; then
    step "fuzzers (20 s each)" scripts/fuzz.sh 20
fi
if $PY -c 'import sys; sys.path.insert(0, "vm-images"); import qemu_launch; sys.exit(0 if qemu_launch.kvm_usable() else 1)'; then
    # Nested KVM on the build machines runs guest ring 0 ~750x slower: a subset, generous timeout.
    step "in-guest self-tests, 2 vCPUs (KVM)" \
        $PY vm-images/selftest.py --kernel $KERNEL --initrd $INITRD --cpus 2 --accel kvm --suite smp,spinlock,sched,user \
        --timeout 900 --log build/selftest-kvm.log
else
    echo "=== KVM boot skipped: /dev/kvm is missing or not accessible"
fi

if [ "${SPINLAB_TEST_SLURM:-0}" = 1 ]; then
    step "experiment sweep on a one-node Slurm cluster (pytest)" slurm_step
fi

echo
[ $failed -eq 0 ] || echo "failed steps: ${failed_names[*]}"
echo "steps: $passed passed, $failed failed"
[ $failed -eq 0 ]
