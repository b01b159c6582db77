// kern/bootopts.cc: the table of every boot option the kernel accepts.
#include "bootopts.h"

#include "../lib/boot_options.h"
#include "../lockstat/timing.h"
#include "console.h"
#include "lockstat.h"

BootOptions g_boot;

namespace {

using bootopt::Kind;
// lock= and clock= choose from the ABI's name tables (spinlab/enum_names.h), "tas|ticket|...":
// the parsed index is the LockAlgorithm / ClockSource value.
constexpr auto kLockChoices = spinlab::join_names<spinlab::joined_size(spinlab::kLockAlgorithmNames)>(
    spinlab::kLockAlgorithmNames, '|');
constexpr auto kClockChoices = spinlab::join_names<spinlab::joined_size(spinlab::kClockSourceNames)>(
    spinlab::kClockSourceNames, '|');
const bootopt::Spec kSpecs[] = {
    {"selftest", Kind::kString, nullptr, 0, 0, "run in-kernel self-tests: all, or suites a,b,c"},
    {"hz", Kind::kUint, nullptr, 10, 1000, "timer interrupts per second per CPU (default 100)"},
    {"maxcpus", Kind::kUint, nullptr, 1, 64, "start at most this many CPUs"},
    {"lock", Kind::kChoice, kLockChoices.text, 0, 0, "spinlock algorithm (default tas)"},
    {"clock", Kind::kChoice, kClockChoices.text, 0, 0, "lockstat time source (default lfence)"},
    {"pause", Kind::kChoice, "on|off", 0, 0, "pause in spin loops (default on)"},
    {"lockup", Kind::kUint, nullptr, 0, 1ull << 62,
     "lockup detector bound in TSC cycles, 0 = off (default 2^34)"},
    {"longwait", Kind::kUint, nullptr, 1, 1ull << 62,
     "long-wait trace events: contended waits of at least this many TSC cycles (default 2^22)"},
    {"pvspin", Kind::kUint, nullptr, 1, 1u << 30,
     "spins before the pv lock yields (default 32768)"},
    {"bench", Kind::kChoice, "spinlock", 0, 0, "run an in-guest benchmark"},
    {"pvyield", Kind::kChoice, "on|off", 0, 0,
     "pv lock: KVM_HC_SCHED_YIELD when KVM offers it (on), or pause only (off)"},
    {"stackprobe", Kind::kChoice, "on|off", 0, 0,
     "a kernel thread with a known call chain for the stack tests (default off)"},
    // The four spinlock-tracing parameters (Windows' EVENT_TRACE_SPINLOCK_INFORMATION), the same
    // names as spinlab-run's [trace] keys and spinlab-collect set's options; minimums as the set
    // call's (lockstat/params.h).
    {"spin-threshold", Kind::kUint, nullptr, spinlab::kMinSpinThreshold, 0xFFFFFFFFu,
     "SpinLockSpinThreshold: fewest spins of a traced contended acquisition (default 1)"},
    {"acquire-sample-rate", Kind::kUint, nullptr, spinlab::kMinAcquireSampleRate, 0xFFFFFFFFu,
     "SpinLockAcquireSampleRate: every Nth uncontended acquisition is sampled (default 1000)"},
    {"contention-sample-rate", Kind::kUint, nullptr, spinlab::kMinContentionSampleRate, 0xFFFFFFFFu,
     "SpinLockContentionSampleRate: every Nth contended acquisition is traced (default 1)"},
    {"hold-threshold", Kind::kUint, nullptr, spinlab::kMinHoldThreshold, 0xFFFFFFFFu,
     "SpinLockHoldThreshold: holds of at least this many TSC cycles are traced (default 1000000)"},
    // timing=all: every acquisition timed, as the original experiment did (lockstat/timing.h).
    {"timing", Kind::kChoice, "contended|all", 0, 0,
     "what spinlocks time: contended|all (default contended; all: every acquisition)"},
    {"pvqspin-spin", Kind::kUint, nullptr, 1, 1u << 30,
     "spins before a pvqspin waiter halts its vCPU (default 32768)"},
    {"pvqspin-kick", Kind::kChoice, "auto|nmi", 0, 0,
     "pvqspin's kick: auto (KVM_HC_KICK_CPU with KVM's PV unhalt, else an NMI) or nmi"},
    // init= takes the rest of the line, so it must come last.
    {"init", Kind::kRest, nullptr, 0, 0, "first program and its arguments (rest of the line)"},
};
static_assert(uint32_t(spinlab::lockstat::Timing::kContended) == 0 &&
              uint32_t(spinlab::lockstat::Timing::kAll) == 1, "timing= choice order");
constexpr int kCount = sizeof kSpecs / sizeof kSpecs[0];
bootopt::Value values[kCount];

}  // namespace

void bootopts_init(const char* cmdline) {
    // Multiboot loaders (QEMU -kernel, GRUB) put the image's path first: skip it.
    const char* p = cmdline;
    while (*p == ' ') p++;
    const char* w = p;
    while (*w && *w != ' ' && *w != '=') w++;
    if (*w != '=') cmdline = w;
    bootopt::Error e = bootopt::parse(cmdline, kSpecs, kCount, values);
    if (!e.ok) {
        kprintf("boot: %s\nboot: known options:\n", e.message);
        for (const auto& s : kSpecs)
            kprintf("  %-10s %s%s%s\n", s.key, s.help, s.kind == Kind::kChoice ? "; one of " : "",
                    s.kind == Kind::kChoice ? s.choices : "");
        kprintf("boot: refusing to boot with a bad command line\n");
        qemu_exit(kExitFail);
    }
    g_boot.selftest = values[0].set ? values[0].str : "";
    g_boot.hz = values[1].set ? uint32_t(values[1].num) : 100;
    g_boot.maxcpus = values[2].set ? uint32_t(values[2].num) : 64;
    g_boot.lock = values[3].set ? uint32_t(values[3].num) : 0;
    g_boot.clock = values[4].set ? uint32_t(values[4].num) : 0;
    g_boot.pause = values[5].set ? values[5].num == 0 : true;
    g_boot.lockup = values[6].set ? values[6].num : kDefaultLockupCycles;
    g_boot.longwait = values[7].set ? values[7].num : kDefaultLongWaitCycles;
    g_boot.pvspin = values[8].set ? uint32_t(values[8].num) : kDefaultPvSpinBound;
    g_boot.bench = values[9].set ? values[9].str : "";
    g_boot.pvyield = values[10].set ? values[10].num == 0 : true;
    g_boot.stackprobe = values[11].set && values[11].num == 0;
    g_boot.spinlock = spinlab::lockstat::kDefaultSpinlockParams;
    if (values[12].set) g_boot.spinlock.spin_threshold = uint32_t(values[12].num);
    if (values[13].set) g_boot.spinlock.acquire_sample_rate = uint32_t(values[13].num);
    if (values[14].set) g_boot.spinlock.contention_sample_rate = uint32_t(values[14].num);
    if (values[15].set) g_boot.spinlock.hold_threshold = uint32_t(values[15].num);
    g_boot.timing = values[16].set ? uint32_t(values[16].num) : 0;
    g_boot.pvqspin_spin = values[17].set ? uint32_t(values[17].num) : kDefaultPvqspinSpinBound;
    g_boot.pvqspin_nmi = values[18].set && values[18].num == 1;
    g_boot.init = values[19].set ? values[19].str : "";
    // No lock is held here (boot CPU, before SMP): the algorithm may change (lockstat.h).
    lockstat_configure({spinlab::LockAlgorithm(g_boot.lock), spinlab::ClockSource(g_boot.clock),
                        g_boot.pause, g_boot.pvspin, g_boot.lockup, g_boot.longwait,
                        g_boot.pvyield, g_boot.timing == uint32_t(spinlab::lockstat::Timing::kAll),
                        g_boot.pvqspin_spin, g_boot.pvqspin_nmi});
    // Before any CPU's lockstat_init_cpu, which loads the acquire countdown from it.
    g_spinlock_params = g_boot.spinlock;
}
