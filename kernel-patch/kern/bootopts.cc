// kern/bootopts.cc: the table of every boot option the kernel accepts. Each row is the whole
// option: its name, what it accepts, its help, its default and where its value goes; the help
// prints the default from the row, so it is written once.
#include "bootopts.h"

#include "../lib/boot_options.h"
#include "../lib/format.h"
#include "../lockstat/timing.h"
#include "console.h"
#include "lockstat.h"

BootOptions g_boot;

namespace {

using bootopt::Kind;
using bootopt::Value;
// lock= and clock= choose from the ABI's name tables (spinlab/enum_names.h), "tas|ticket|...":
// the parsed index is the LockAlgorithm / ClockSource value.
constexpr auto kLockChoices = spinlab::join_names<spinlab::joined_size(spinlab::kLockAlgorithmNames)>(
    spinlab::kLockAlgorithmNames, '|');
constexpr auto kClockChoices = spinlab::join_names<spinlab::joined_size(spinlab::kClockSourceNames)>(
    spinlab::kClockSourceNames, '|');
constexpr spinlab::lockstat::SpinlockParams kSpin = spinlab::lockstat::kDefaultSpinlockParams;

constexpr uint64_t kUnset = ~0ull;  // a choice with no default word: off unless given (bench=)

struct Option {
    bootopt::Spec spec;
    uint64_t def;  // kUint: the value; kChoice: the index of the default word, or kUnset; strings: ""
    void (*store)(const Value& v);  // v.num / v.str: the given value, else the default
};

// Choices "on|off" index 0 is on.
bool on(const Value& v) { return v.num == 0; }

const Option kOptions[] = {
    {{"selftest", Kind::kString, nullptr, 0, 0, "run in-kernel self-tests: all, or suites a,b,c"}, 0,
     [](const Value& v) { g_boot.selftest = v.str; }},
    {{"hz", Kind::kUint, nullptr, 10, 1000, "timer interrupts per second per CPU"}, 100,
     [](const Value& v) { g_boot.hz = uint32_t(v.num); }},
    {{"maxcpus", Kind::kUint, nullptr, 1, 64, "start at most this many CPUs"}, 64,
     [](const Value& v) { g_boot.maxcpus = uint32_t(v.num); }},
    {{"lock", Kind::kChoice, kLockChoices.text, 0, 0, "spinlock algorithm"}, 0,
     [](const Value& v) { g_boot.lock = uint32_t(v.num); }},
    {{"clock", Kind::kChoice, kClockChoices.text, 0, 0, "lockstat time source"}, 0,
     [](const Value& v) { g_boot.clock = uint32_t(v.num); }},
    {{"pause", Kind::kChoice, "on|off", 0, 0, "pause in spin loops"}, 0,
     [](const Value& v) { g_boot.pause = on(v); }},
    {{"lockup", Kind::kUint, nullptr, 0, 1ull << 62, "lockup detector bound in TSC cycles, 0 = off"},
     kDefaultLockupCycles, [](const Value& v) { g_boot.lockup = v.num; }},
    // The long-wait threshold (SystemConfiguration.long_wait_threshold): one default, the ABI's,
    // which the report uses too. longwait= is its spelling before 2026-11-28 (old specs' append).
    {{"long-wait", Kind::kUint, nullptr, 1, 1ull << 62,
      "long-wait trace events: contended waits of at least this many TSC cycles"},
     spinlab::kDefaultLongWaitThreshold, [](const Value& v) { g_boot.long_wait = v.num; }},
    {{"longwait", Kind::kUint, nullptr, 1, 1ull << 62, "the old spelling of long-wait="},
     spinlab::kDefaultLongWaitThreshold, [](const Value& v) { if (v.set) g_boot.long_wait = v.num; }},
    {{"pvspin", Kind::kUint, nullptr, 1, 1u << 30, "spins before the pv lock yields"}, kDefaultPvSpinBound,
     [](const Value& v) { g_boot.pvspin = uint32_t(v.num); }},
    {{"bench", Kind::kChoice, "spinlock|traceevent|memwrite", 0, 0, "run an in-guest benchmark instead of init="}, kUnset,
     [](const Value& v) { g_boot.bench = v.set ? v.str : ""; }},
    {{"pvyield", Kind::kChoice, "on|off", 0, 0,
      "pv lock: KVM_HC_SCHED_YIELD when KVM offers it (on), or pause only (off)"},
     0, [](const Value& v) { g_boot.pvyield = on(v); }},
    {{"stackprobe", Kind::kChoice, "on|off", 0, 0, "a kernel thread with a known call chain for the stack tests"},
     1, [](const Value& v) { g_boot.stackprobe = on(v); }},
    // The four spinlock-tracing parameters (Windows' EVENT_TRACE_SPINLOCK_INFORMATION), the same
    // names as spinlab-run's [trace] keys and spinlab-collect set's options; minimums as the set
    // call's (lockstat/params.h), which are also the defaults.
    {{"spin-threshold", Kind::kUint, nullptr, spinlab::kMinSpinThreshold, 0xFFFFFFFFu,
      "SpinLockSpinThreshold: fewest spins of a traced contended acquisition"},
     kSpin.spin_threshold, [](const Value& v) { g_boot.spinlock.spin_threshold = uint32_t(v.num); }},
    {{"acquire-sample-rate", Kind::kUint, nullptr, spinlab::kMinAcquireSampleRate, 0xFFFFFFFFu,
      "SpinLockAcquireSampleRate: every Nth uncontended acquisition is sampled"},
     kSpin.acquire_sample_rate, [](const Value& v) { g_boot.spinlock.acquire_sample_rate = uint32_t(v.num); }},
    {{"contention-sample-rate", Kind::kUint, nullptr, spinlab::kMinContentionSampleRate, 0xFFFFFFFFu,
      "SpinLockContentionSampleRate: every Nth contended acquisition is traced"},
     kSpin.contention_sample_rate,
     [](const Value& v) { g_boot.spinlock.contention_sample_rate = uint32_t(v.num); }},
    {{"hold-threshold", Kind::kUint, nullptr, spinlab::kMinHoldThreshold, 0xFFFFFFFFu,
      "SpinLockHoldThreshold: holds of at least this many TSC cycles are traced"},
     kSpin.hold_threshold, [](const Value& v) { g_boot.spinlock.hold_threshold = uint32_t(v.num); }},
    // timing=all: every acquisition timed, as the original experiment did (lockstat/timing.h).
    {{"timing", Kind::kChoice, "contended|all", 0, 0, "what spinlocks time (all: every acquisition)"},
     uint32_t(spinlab::lockstat::Timing::kContended), [](const Value& v) { g_boot.timing = uint32_t(v.num); }},
    // pvqspin (spinlock/pv_qspinlock.h): the spin bound before a waiter halts its vCPU, and the kick.
    {{"pvqspin-spin", Kind::kUint, nullptr, 1, 1u << 30, "spins before a pvqspin waiter halts its vCPU"},
     kDefaultPvqspinSpinBound, [](const Value& v) { g_boot.pvqspin_spin = uint32_t(v.num); }},
    {{"pvqspin-kick", Kind::kChoice, "auto|nmi", 0, 0,
      "pvqspin's kick: auto (KVM_HC_KICK_CPU with KVM's PV unhalt, else an NMI) or nmi"},
     0, [](const Value& v) { g_boot.pvqspin_nmi = v.num == 1; }},
    // init= takes the rest of the line, so it must come last.
    {{"init", Kind::kRest, nullptr, 0, 0, "first program and its arguments (rest of the line)"}, 0,
     [](const Value& v) { g_boot.init = v.str; }},
};
static_assert(uint32_t(spinlab::lockstat::Timing::kContended) == 0 &&
              uint32_t(spinlab::lockstat::Timing::kAll) == 1, "timing= choice order");
constexpr int kCount = sizeof kOptions / sizeof kOptions[0];
bootopt::Spec specs[kCount];
Value values[kCount];

// The default as the help says it: a number (2^k for a power of two from 2^10), a choice's word,
// nothing for a string.
void default_text(const Option& o, char* out, size_t size) {
    out[0] = 0;
    if (o.spec.kind == Kind::kUint) {
        const uint64_t d = o.def;
        if (d >= 1024 && (d & (d - 1)) == 0)
            format(out, size, " (default 2^%d)", 63 - __builtin_clzll(d));
        else
            format(out, size, " (default %llu)", (unsigned long long)d);
    } else if (o.spec.kind == Kind::kChoice && o.def != kUnset) {
        const char* w = o.spec.choices;
        for (uint64_t i = 0; i < o.def && *w; w++)
            if (*w == '|') i++;
        char word[24];
        size_t n = 0;
        while (w[n] && w[n] != '|' && n + 1 < sizeof word) word[n] = w[n], n++;
        word[n] = 0;
        format(out, size, " (default %s)", word);
    }
}

}  // namespace

void bootopts_init(const char* cmdline) {
    // Multiboot loaders (QEMU -kernel, GRUB) put the image's path first: skip it.
    const char* p = cmdline;
    while (*p == ' ') p++;
    const char* w = p;
    while (*w && *w != ' ' && *w != '=') w++;
    if (*w != '=') cmdline = w;
    for (int i = 0; i < kCount; i++) specs[i] = kOptions[i].spec;
    bootopt::Error e = bootopt::parse(cmdline, specs, kCount, values);
    if (!e.ok) {
        kprintf("boot: %s\nboot: known options:\n", e.message);
        for (const Option& o : kOptions) {
            char def[40];
            default_text(o, def, sizeof def);
            kprintf("  %-22s %s%s%s%s\n", o.spec.key, o.spec.help, def, o.spec.kind == Kind::kChoice ? "; one of " : "",
                    o.spec.kind == Kind::kChoice ? o.spec.choices : "");
        }
        kprintf("boot: refusing to boot with a bad command line\n");
        qemu_exit(kExitFail);
    }
    g_boot.spinlock = kSpin;
    for (int i = 0; i < kCount; i++) {
        Value& v = values[i];
        if (!v.set) v.num = kOptions[i].def;  // strings stay "" (parse leaves them empty)
        kOptions[i].store(v);
    }
    // No lock is held here (boot CPU, before SMP): the algorithm may change (lockstat.h).
    lockstat_configure({spinlab::LockAlgorithm(g_boot.lock), spinlab::ClockSource(g_boot.clock),
                        g_boot.pause, g_boot.pvspin, g_boot.lockup, g_boot.long_wait,
                        g_boot.pvyield, g_boot.timing == uint32_t(spinlab::lockstat::Timing::kAll),
                        g_boot.pvqspin_spin, g_boot.pvqspin_nmi});
    // Before any CPU's lockstat_init_cpu, which loads the acquire countdown from it.
    g_spinlock_params = g_boot.spinlock;
}
