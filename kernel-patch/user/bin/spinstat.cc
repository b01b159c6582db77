// spinstat: the user-mode reader of the spinlock counters, as in the original WRK experiment (a
// system service reads each CPU's counters; the user-mode program merges them). Queries every CPU
// through query_system_information, prints the table `2^k  count  %`, and sets the four
// EVENT_TRACE_SPINLOCK_INFORMATION parameters. Starts, stops and shows a trace session (the kernel
// logger, trace.h) through the same system call.
#include "../lib/ulib.h"
#include "lib/format.h"
#include "lockstat/log2_table.h"
#include "locktrace/trace_session.h"
#include "spinlab/status.h"
#include "spinlab/sysinfo.h"
#include "spinlab/trace.h"

using namespace spinlab;

namespace {

constexpr uint64_t kU32Max = 0xffffffffull;
// --trace-mode's words: the LoggerMode names ("real-time|circular|no-drop-stall").
constexpr auto kTraceModeChoices =
    join_names<joined_size(kTraceLoggerModeNames)>(kTraceLoggerModeNames, '|');

const char* status_str(uint32_t s) { return status_name(static_cast<Status>(s)); }

// Queries a variable-length class: asks once for the size, then for the data.
void* query_var(InfoClass cls, const void* head, uint32_t head_len, uint32_t* len_out) {
    uint32_t need = 0;
    uint8_t probe[64] = {};
    memcpy(probe, head, head_len);
    uint32_t st = sys::query_system_information(uint32_t(cls), probe, head_len, &need);
    if (st != uint32_t(Status::kInfoLengthMismatch) && st != uint32_t(Status::kSuccess)) {
        eprintf("spinstat: query 0x%x: %s\n", uint32_t(cls), status_str(st));
        return nullptr;
    }
    if (st == uint32_t(Status::kSuccess)) need = head_len;
    auto* buf = static_cast<uint8_t*>(malloc(need));
    if (!buf) return nullptr;
    memset(buf, 0, need);
    memcpy(buf, head, head_len);
    st = sys::query_system_information(uint32_t(cls), buf, need, len_out);
    if (st != uint32_t(Status::kSuccess)) {
        eprintf("spinstat: query 0x%x: %s\n", uint32_t(cls), status_str(st));
        free(buf);
        return nullptr;
    }
    return buf;
}

bool class_names(char names[kMaxLockClasses][kLockClassNameLen]) {
    uint32_t len = 0;
    LockClassTableReply head{};
    auto* r = static_cast<LockClassTableReply*>(query_var(InfoClass::kSpinlabLockClassTable, &head, sizeof head, &len));
    if (!r) return false;
    auto* e = reinterpret_cast<LockClassEntry*>(r + 1);
    for (uint32_t i = 0; i < r->count && i < kMaxLockClasses; i++)
        memcpy(names[e[i].id % kMaxLockClasses], e[i].name, kLockClassNameLen);
    free(r);
    return true;
}

void print_table(const char* title, const LockClassPerf& p, bool hold, bool lhp) {
    static char buf[8192];
    printf("%s: %lu acquisitions, %lu uncontended, max wait %lu cycles\n", title, p.acquisitions,
           p.uncontended, p.wait_cycles_max);
    lockstat::format_wait_table(p, buf, sizeof buf);
    puts_raw(buf);
    if (hold) {
        printf("holds (timed %lu, long %lu):\n", p.holds_timed, p.long_holds);
        lockstat::format_hold_table(p, buf, sizeof buf);
        puts_raw(buf);
    }
    if (lhp) {
        for (uint32_t k = 0; k < kLhpClassCount; k++)
            printf("  lhp %-17s %10lu waits %14lu cycles\n", lhp_class_name(LhpClass(k)),
                   p.lhp_count[k], p.lhp_cycles[k]);
    }
}

int show(uint64_t cpu, const char* cls, bool per_cpu, bool per_class, bool hold, bool lhp) {
    char names[kMaxLockClasses][kLockClassNameLen] = {};
    if (!class_names(names)) return 1;
    uint32_t class_id = kAllLockClasses;
    if (strcmp(cls, "all") != 0) {
        uint64_t id;
        bool found = false;
        for (uint32_t i = 0; i < kMaxLockClasses; i++)
            if (strcmp(names[i], cls) == 0) class_id = i, found = true;
        if (!found && parse_u64(cls, &id) && id < kMaxLockClasses) class_id = uint32_t(id), found = true;
        if (!found) {
            eprintf("spinstat: --class '%s': no such lock class (spinstat --classes lists them)\n", cls);
            return 2;
        }
    }
    SpinlockPerfRequest req{};
    req.cpu = cpu == ~0ull ? kAllCpus : uint32_t(cpu);
    req.lock_class = class_id;
    req.flags = (per_cpu ? 0 : kPerfMergeCpus) | (per_class ? 0 : kPerfMergeClasses);
    uint32_t len = 0;
    auto* r = static_cast<SpinlockPerfReply*>(query_var(InfoClass::kSpinlabSpinlockPerfData, &req, sizeof req, &len));
    if (!r) return 1;
    auto* rec = reinterpret_cast<SpinlockPerfRecord*>(r + 1);
    for (uint32_t i = 0; i < r->record_count; i++) {
        const SpinlockPerfRecord& x = rec[i];
        if (per_class && x.perf.acquisitions == 0) continue;  // quiet classes
        char title[96];
        char cpu_s[16];
        format(cpu_s, sizeof cpu_s, x.cpu == kAllCpus ? "all CPUs" : "cpu %u", x.cpu);
        format(title, sizeof title, "%s, %s", cpu_s,
               x.class_id == kAllLockClasses ? "all lock classes" : names[x.class_id % kMaxLockClasses]);
        print_table(title, x.perf, hold, lhp);
    }
    free(r);
    return 0;
}

int classes() {
    uint32_t len = 0;
    LockClassTableReply head{};
    auto* r = static_cast<LockClassTableReply*>(query_var(InfoClass::kSpinlabLockClassTable, &head, sizeof head, &len));
    if (!r) return 1;
    auto* e = reinterpret_cast<LockClassEntry*>(r + 1);
    printf("%-4s %-24s %s\n", "id", "class", "locks");
    for (uint32_t i = 0; i < r->count; i++) printf("%-4u %-24s %u\n", e[i].id, e[i].name, e[i].lock_count);
    free(r);
    return 0;
}

int info() {
    SystemConfiguration c{};
    uint32_t len = 0;
    uint32_t st = sys::query_system_information(uint32_t(InfoClass::kSpinlabSystemConfiguration), &c, sizeof c, &len);
    if (st != uint32_t(Status::kSuccess)) {
        eprintf("spinstat: configuration: %s\n", status_str(st));
        return 1;
    }
    printf("cpus %u, tsc %lu Hz, lock %s, clock %s, pause %s, instrument %u, steal time %s\n"
           "hypervisor '%s', kvm features 0x%x, long-wait threshold %lu cycles, build %s\n",
           c.cpu_count, c.tsc_hz, lock_algorithm_name(LockAlgorithm(c.lock_algorithm)),
           clock_source_name(ClockSource(c.clock_source)), c.pause_enabled ? "on" : "off",
           c.instrument_level, c.steal_time ? "yes" : "no", c.hypervisor_signature, c.kvm_features,
           c.long_wait_threshold, c.build_id);
    return 0;
}

bool get_params(EventTraceSpinlockInformation* p) {
    *p = {};
    p->event_trace_information_class = uint32_t(EventTraceInformationClass::kEventTraceSpinlockInformation);
    uint32_t len = 0;
    uint32_t st = sys::query_system_information(uint32_t(InfoClass::kSystemPerformanceTraceInformation), p, sizeof *p, &len);
    if (st != uint32_t(Status::kSuccess)) {
        eprintf("spinstat: query SystemPerformanceTraceInformation: %s\n", status_str(st));
        return false;
    }
    return true;
}

int params(bool set, uint64_t spin, uint64_t acquire, uint64_t contention, uint64_t hold) {
    EventTraceSpinlockInformation p;
    if (!get_params(&p)) return 1;
    if (set) {
        const struct { const char* name; uint64_t v; uint32_t* field; uint32_t min; } f[] = {
            {"SpinLockSpinThreshold", spin, &p.spin_threshold, kMinSpinThreshold},
            {"SpinLockAcquireSampleRate", acquire, &p.acquire_sample_rate, kMinAcquireSampleRate},
            {"SpinLockContentionSampleRate", contention, &p.contention_sample_rate, kMinContentionSampleRate},
            {"SpinLockHoldThreshold", hold, &p.hold_threshold, kMinHoldThreshold},
        };
        for (auto& x : f)
            if (x.v != ~0ull) *x.field = uint32_t(x.v);  // parse_opts kept it to 32 bits
        uint32_t st = sys::set_system_information(uint32_t(InfoClass::kSystemPerformanceTraceInformation), &p, sizeof p);
        if (st != uint32_t(Status::kSuccess)) {
            eprintf("spinstat: set refused: %s\n", status_str(st));
            for (auto& x : f)
                if (*x.field < x.min)
                    eprintf("spinstat: %s = %u is below its minimum; permitted range %u to 4294967295\n",
                            x.name, *x.field, x.min);
            return 1;
        }
        if (!get_params(&p)) return 1;
    }
    printf("SpinLockSpinThreshold        %u\nSpinLockAcquireSampleRate    %u\n"
           "SpinLockContentionSampleRate %u\nSpinLockHoldThreshold        %u\n",
           p.spin_threshold, p.acquire_sample_rate, p.contention_sample_rate, p.hold_threshold);
    return 0;
}

int reset() {
    ResetRequest r{kAllCpus, kAllLockClasses};
    uint32_t st = sys::set_system_information(uint32_t(InfoClass::kSpinlabResetCounters), &r, sizeof r);
    if (st != uint32_t(Status::kSuccess)) {
        eprintf("spinstat: reset refused: %s\n", status_str(st));
        return 1;
    }
    printf("spinstat: counters reset\n");
    return 0;
}

// A trace session (class 0x1F, sub-class kSpinlabTraceSession), the request spinlab-collect
// sends over the channel. Inside the guest nothing drains real-time buffers, so a session started
// here is a flight recorder by default (circular: the newest buffers, read by the host with
// spinlab-collect trace dump/record, or counted in --trace-status). Start and stop need privilege.
bool trace_groups(const char* text, uint32_t* flags) {
    *flags = 0;
    while (*text) {
        const char* end = text;
        while (*end && *end != ',') end++;
        const uint64_t n = uint64_t(end - text);
        bool known = n == 3 && memcmp(text, "all", 3) == 0;
        if (known) *flags |= kTraceGroupAll;
        for (uint32_t i = 0; i < kTraceGroupCount && !known; i++) {
            const char* names[2] = {trace_group_name(i), trace_group_old_name(i)};
            for (const char* name : names)
                if (name && strlen(name) == n && memcmp(text, name, n) == 0) *flags |= 1u << i, known = true;
        }
        if (!known) {
            eprintf("spinstat: --trace-start: unknown group in '%s'; groups: all, spinlock, cswitch, ready, "
                    "syscall, profile, process, memory, long-wait\n", text);
            return false;
        }
        text = *end ? end + 1 : end;
    }
    return *flags != 0;
}

int trace_set(TraceSessionInformation& s, const char* what) {
    const uint32_t st = sys::set_system_information(uint32_t(InfoClass::kSystemPerformanceTraceInformation), &s,
                                                    sizeof s);
    if (st == uint32_t(Status::kSuccess)) return 0;
    eprintf("spinstat: trace %s refused: %s\n", what, status_str(st));
    return 1;
}

int trace_status() {
    TraceSessionInformation s{};
    s.event_trace_information_class = kSpinlabTraceSession;
    uint32_t len = 0;
    const uint32_t st = sys::query_system_information(uint32_t(InfoClass::kSystemPerformanceTraceInformation), &s,
                                                      sizeof s, &len);
    if (st != uint32_t(Status::kSuccess)) {
        eprintf("spinstat: trace status: %s\n", status_str(st));
        return 1;
    }
    printf("trace session %lu: %s, mode %s, groups", s.session_id, trace_state_name(TraceState(s.state)),
           trace_logger_mode_name(TraceLoggerMode(s.logger_mode)));
    for (uint32_t i = 0; i < kTraceGroupCount; i++)
        if (s.enable_flags & (1u << i)) printf(" %s", trace_group_name(i));
    printf("\n%u CPUs x %u buffers of %u bytes\n", s.cpu_count, s.buffers_per_cpu, s.buffer_size);
    printf("events attempted %lu written %lu lost %lu; buffers written %lu, log buffers lost %lu, "
           "real-time buffers lost %lu\n", s.totals.events_attempted, s.totals.events_written, s.totals.events_lost,
           s.totals.buffers_written, s.totals.log_buffers_lost, s.totals.realtime_buffers_lost);
    return 0;
}

int trace(const char* start_groups, const char* mode, bool stop, bool status) {
    if (start_groups) {
        TraceSessionInformation s = locktrace::default_session_params();
        s.command = uint32_t(TraceCommand::kStart);
        if (!trace_groups(start_groups, &s.enable_flags)) return 2;
        for (uint32_t i = 0; i < kTraceLoggerModeCount; i++)  // parse_opts took one of these
            if (strcmp(mode, trace_logger_mode_name(TraceLoggerMode(i))) == 0) s.logger_mode = i;
        if (trace_set(s, "start")) return 1;
    }
    if (stop) {
        TraceSessionInformation s{};
        s.event_trace_information_class = kSpinlabTraceSession;
        s.command = uint32_t(TraceCommand::kStop);
        if (trace_set(s, "stop")) return 1;
    }
    return status || start_groups || stop ? trace_status() : 0;
}

}  // namespace

int main(int argc, char** argv) {
    uint64_t cpu = ~0ull, spin = ~0ull, acquire = ~0ull, contention = ~0ull, hold = ~0ull;
    const char* cls = "all";
    const char* trace_start = nullptr;
    const char* trace_mode = "circular";
    bool trace_stop = false, trace_stat = false;
    bool per_cpu = false, per_class = false, show_hold = false, lhp = false, do_info = false,
         do_classes = false, do_params = false, do_reset = false;
    const uint64_t ncpu = uint64_t(sys::cpu_count());
    const Opt opts[] = {
        u64_opt("--cpu", &cpu, "one CPU (default: all, merged)", 0, ncpu - 1),
        text_opt("--class", &cls, "one lock class by name or id (default: all, merged)"),
        flag_opt("--per-cpu", &per_cpu, "a table per CPU"),
        flag_opt("--per-class", &per_class, "a table per lock class (classes with acquisitions)"),
        flag_opt("--hold", &show_hold, "also the hold-time tables"),
        flag_opt("--lhp", &lhp, "also the lock-holder-preemption classes of the waits"),
        flag_opt("--info", &do_info, "system configuration (lock, clock, hypervisor, ...)"),
        flag_opt("--classes", &do_classes, "the lock class table"),
        flag_opt("--params", &do_params, "the four spinlock tracing parameters"),
        // The kernel checks the minimums (a refusal names the parameter); the fields are 32 bits.
        u64_opt("--spin-threshold", &spin, "set SpinLockSpinThreshold (min 1)", 0, kU32Max),
        u64_opt("--acquire-sample-rate", &acquire, "set SpinLockAcquireSampleRate (min 1000)", 0, kU32Max),
        u64_opt("--contention-sample-rate", &contention, "set SpinLockContentionSampleRate (min 1)", 0, kU32Max),
        u64_opt("--hold-threshold", &hold, "set SpinLockHoldThreshold, cycles (min 1000000)", 0, kU32Max),
        flag_opt("--reset", &do_reset, "zero every counter (privileged)"),
        text_opt("--trace-start", &trace_start,
                 "start a trace session of these groups: all, spinlock, cswitch, ready, syscall, profile, "
                 "process, memory, long-wait (privileged)"),
        choice_opt("--trace-mode", &trace_mode, kTraceModeChoices.text,
                   "its LoggerMode (default circular: nothing drains it here)"),
        flag_opt("--trace-stop", &trace_stop, "stop the trace session (privileged)"),
        flag_opt("--trace-status", &trace_stat, "the trace session: state, groups, loss counters"),
    };
    if (!parse_opts(argc, argv, opts,
                    "Spinlock wait and hold histograms of every CPU, merged into one log2 table.\n"
                    "Setting parameters and resetting need a privileged process."))
        return 2;
    bool set = spin != ~0ull || acquire != ~0ull || contention != ~0ull || hold != ~0ull;
    if (trace_start || trace_stop || trace_stat) return trace(trace_start, trace_mode, trace_stop, trace_stat);
    if (do_info) return info();
    if (do_classes) return classes();
    if (do_reset) return reset();
    if (do_params || set) return params(set, spin, acquire, contention, hold);
    return show(cpu, cls, per_cpu, per_class, show_hold, lhp);
}
