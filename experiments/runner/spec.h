// experiments/runner/spec.h: the experiment spec. One INI file (Boost.Program_options' config
// file parser) whose every key is also a command-line option with the section as a prefix:
// `[vm] cpus = 2` in the file and `--vm.cpus 2` on the command line say the same thing, and the
// command line wins. Parsed into a Spec returned by value; every bad key, value or range is a
// SpecError whose message names the key (and the file when it came from one).
#pragma once
#include <spinlab/sysinfo.h>
#include <spinlab/trace.h>

#include <array>
#include <optional>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "phase.h"

namespace spinlab::run {

class SpecError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct VmSpec {
    std::string name;        // empty: "run<pid>"
    std::string attach;      // an already running VM's name: neither started nor stopped
    // spinlab (its kernel, build/kernel/) or linux (Debian's kernel with spinlab's agent,
    // vm-images/linux/: spinlab-vm --guest linux). A Linux guest's lock is mcs, tas or pvqspin
    // (Linux's native queued spinlock, its virt_spin_lock test-and-set, its PV queued lock), its
    // workload one of the agent's (spinlab.workload=), and spinlab's kernel's boot options
    // (clock, pause, hz, long-wait, the spinlock-tracing parameters, kmix) are refused.
    std::string guest = "spinlab";
    uint32_t cpus = 2;
    uint32_t memory_mb = 256;
    std::string accel = "auto";    // auto | kvm | tcg
    std::string backend = "qemu";  // qemu | libvirt
    // A lock_algorithm_name() and a clock_source_name() (the ABI's tables: the choices).
    std::string lock = lock_algorithm_name(LockAlgorithm::kTestAndSet);
    std::string clock = clock_source_name(ClockSource::kLfenceRdtsc);
    bool pause = true;
    uint32_t hz = 0;                // 0: the kernel's default timer rate
    // long-wait=: contended waits this long are long-wait trace events (the waits the runner
    // lists and the report attributes); the ABI's default, the report's default --threshold.
    uint64_t long_wait = kDefaultLongWaitThreshold;
    std::vector<uint32_t> pin;      // one host CPU per vCPU, or empty
    std::string kernel;             // empty: spinlab-vm's default (build/kernel/spinlab.elf)
    std::string initrd;
    std::string append;             // more kernel options, before init=
    double boot_timeout_s = 60;     // until the region is laid out and the channel answers
    // One channel request: under TCG it takes milliseconds, but a guest whose vCPUs wait for a
    // FIFO lock handed to a descheduled vCPU (ticket, mcs on an oversubscribed host) can take
    // tens of seconds to answer (measured: 40-100 s at 4 vCPUs on a loaded 2-core host).
    double channel_timeout_s = 5;
};

struct WorkloadSpec {
    std::string program = "lockbench";  // /bin/<program> in the guest (init=)
    std::string args;
    bool kmix = true;                   // kmix alongside (see init_line())
    std::string kmix_args = "--duration-ms 0";
    // Lock classes whose acquisitions are the throughput: names starting with one of these.
    std::vector<std::string> throughput_classes{"user"};
};

struct RunSpec {
    std::vector<Phase> phases;
    double duration_s = 8;
    double warmup_s = 2;
    uint32_t repetitions = 3;
    uint64_t seed = 1;
    Order order = Order::kAbba;
    uint32_t freeze_period_ms = 100;
    // The freeze injector's SCHED_FIFO priority (0: an ordinary thread). On a busy host an
    // ordinary injector wakes late (3.2 ms once in 960 freezes measured), moving the schedule.
    uint32_t freeze_rt_priority = 10;
    std::vector<uint32_t> freeze_vcpus{0};   // vCPU indexes frozen by freeze-Nms
    std::vector<uint32_t> throttle_vcpus;    // empty: every vCPU
    std::vector<uint32_t> hog_cpus;          // empty: every host CPU
    uint32_t clock_samples = 4;              // per repetition
    bool timeline = true;                    // record sched_switch (needs root and tracefs)
    // The host keeps the guest's per-vCPU "off" words (spinlab/vcpu_state.h) from the
    // timeline's switch records and the freezes, while measuring.
    bool vcpu_state = false;
};

// [trace]: a trace session per repetition (spinlab/trace.h), its parameters as the collector's
// `trace start` options name them. Every contended wait >= long-wait= is a long-wait event, so
// the long waits of a snapshot come from the trace; enable = none runs no session (and lists no
// long waits).
struct TraceSpec {
    TraceSessionInformation params = default_params();
    // spin-threshold, acquire-sample-rate, contention-sample-rate, hold-threshold: the four
    // spinlock-tracing parameters of Windows (SpinLockSpinThreshold, ...), in the order of
    // lockstat::kSpinlockParamInfo. They are the kernel's, not the session's: spinlab-run passes
    // each one set as the boot option of the same name (kernel_append). Unset: the kernel's
    // default (the minimum).
    std::array<std::optional<uint32_t>, 4> spinlock;
    // The call stacks of the session's events (stack-enable, stack-caching, stack-depth,
    // stack-buckets, stack-cache-size; the collector's trace start --stack-* options): set in
    // the guest before each start. Default: no stacks.
    TraceStackInformation stacks = default_stacks();
    // export: formats each repetition's trace is exported to ("ctf", "perfetto"; in the order
    // given), beside the results (trace-export/<phase>-r<rep>.ctf/ and .json). Empty: none.
    std::vector<std::string> exports;
    bool enabled() const { return params.enable_flags != 0; }
    static TraceSessionInformation default_params();  // the collector's defaults, enable = long-wait
    static TraceStackInformation default_stacks();     // the guest's defaults: no stacks
};

// [neighbours]: the other VMs of a neighbours-N phase (neighbours.h). Each is a spinlab guest
// started with `spinlab-vm run` like the measured VM; what is unset follows the measured VM
// ([vm], [workload]), so by default both sides run the same workload on their own locks.
struct NeighbourSpec {
    uint32_t cpus = 0;        // vCPUs of each neighbour; 0: vm.cpus
    uint32_t memory_mb = 0;   // 0: vm.memory
    std::string lock;         // empty: vm.lock
    std::string program;      // empty: the measured VM's whole [workload] (program, args, kmix)
    std::string args;         // with program: its arguments (kmix off)
    // Host CPUs every VM's vCPUs are placed on, the measured VM's first, then neighbour 1's,
    // ... each vCPU on the next CPU of the list, round robin (pin_plan). Set for the whole run,
    // so every phase compares on the same host CPUs. Empty: nothing is pinned.
    std::vector<uint32_t> host_cpus;
};

struct OutputSpec {
    std::string dir = "results";
    std::string run_id;  // empty: <UTC date>-<time>
};

struct Spec {
    std::string spec_file;  // the --spec file, if any
    VmSpec vm;
    WorkloadSpec workload;
    RunSpec run;
    TraceSpec trace;
    NeighbourSpec neighbours;
    OutputSpec output;
};

struct ParsedSpec {
    bool help = false;
    bool dry_run = false;  // print the plan and exit
    Spec spec;
};

// Turns the --spec value into a file to read (locations.h: a path, or a spec's name); throws
// SpecError when there is none.
using SpecFinder = std::function<std::string(const std::string&)>;

// argv as given to main(). Throws SpecError. With find_spec, --spec may name a spec, and without
// --spec the spec named "default" is read (spinlab-run alone runs the default experiment);
// without find_spec, --spec is a path and no spec file means the built-in defaults.
ParsedSpec parse_spec(int argc, const char* const* argv, const SpecFinder& find_spec = nullptr);

// The --help text, ending with EXAMPLES.
std::string usage_text();

// The spec as run, as INI text every key of which parse_spec reads back to the same Spec.
std::string to_ini(const Spec& s);

// The kernel command line: options, then init= (which takes the rest of the line).
std::string kernel_append(const Spec& s);
// The init= value alone.
std::string init_line(const WorkloadSpec& w);
// What the guest runs, as meta.json's "workload" says it: init_line, or a Linux guest's agent
// workload with its parameters ("hackbench spinlab.hackbench=2x20").
std::string workload_line(const Spec& s);

}  // namespace spinlab::run
