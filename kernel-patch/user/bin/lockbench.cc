// lockbench: the lock-contention workload. Threads pinned one (or more) per CPU take a set of K
// locks in a pattern, hold each for a critical section of C cycles and think T cycles between
// acquisitions. The locks are the kernel's own lock code (kernel-patch/spinlock/ + lockstat/,
// the algorithm chosen at boot with lock=), run in ring 3 against the kernel's per-CPU counters
// mapped into this process (kSysMapLockstat): their waits land in the workload lock classes
// ("user0".."user15") beside the kernel's locks, where spinstat and the host collector read
// them. Ring 3 also runs at full speed under the slow nested KVM of the build machines.
//
// Prints operations per second per thread and in total, and the exact number of acquisitions
// per lock class, so the counters can be checked against it (--verify does that itself).
// With --rounds N (0: until the VM stops) it runs N timed rounds with --pause-ms between them;
// each round's end prints the counts so far (and the verdict with --verify) while no thread
// runs, and "lockbench: round R start" is printed before a round's threads exist. The soak
// (experiments/soak) reads the counters from the host between those two lines, when every
// workload class is quiescent.
//
// The four spinlock-tracing parameters (SpinLockAcquireSampleRate & co.) are the kernel's: the
// lock code here reads the kernel's live copy itself, through the read-only page that
// kSysMapLockstat maps (LockstatMapping::params_base, kern/params_page.h), so a set during a
// run (`spinlab-collect set`, or spinstat's system call) reaches these locks at their next
// release, as it reaches the kernel's locks; nothing is copied, polled or refreshed.
#include "../lib/ulib.h"
#include "lib/format.h"
#include "lockstat/build_level.h"
#include "lockstat/clock.h"
#include "lockstat/instrumented_lock.h"
#include "locktrace/spinlock_event.h"
#include "locktrace/trace_session.h"
#include "locktrace/user_ring.h"
#include "spinlab/status.h"
#include "spinlab/sysinfo.h"
#include "spinlab/vcpu_state.h"

using namespace spinlab;

namespace {

LockstatMapping map;
// The kernel's live parameters (map.params_base, read-only): the words its own locks read.
const lockstat::SpinlockParams* live_params;

struct kvm_steal_time_view {  // the first fields of struct kvm_steal_time (KVM ABI)
    uint64_t steal;
    uint32_t version;
    uint32_t flags;
    uint8_t preempted;
};

// The Env of kernel-patch/spinlock and lockstat, for a thread pinned to one CPU.
struct UserEnv {
    uint32_t cpu_id;
    LockAlgorithm algo;
    LockAlgorithm algorithm() const { return algo; }
    uint32_t cpu() const { return cpu_id; }
    void relax() {
        if (map.pause) asm volatile("pause");
    }
    uint32_t pv_spin_bound() const { return map.pv_spin_bound ? map.pv_spin_bound : 1; }
    // Ring 3 cannot make the PV sched-yield hypercall: give this vCPU to another thread instead.
    void yield_to(uint32_t) {
        yields++;
        sys::yield();
    }
    // Ring 3 cannot halt its vCPU, nor kick another: pvqspin's waiter sleeps in the kernel
    // instead (kSysWordWait, kern/word_wait.h: futex-like, it sleeps only while *word == val),
    // and its releaser wakes it (kSysWordWake) after changing the word (pv_qspinlock.h's
    // PvWordEnv). A vCPU whose threads all sleep runs its idle thread, which halts: the host
    // sees the vCPU thread sleep. The spin bound before sleeping is the kernel's
    // (pvqspin-spin=). Counted: waits that slept, waits that found the word changed, wakes and
    // threads woken.
    uint32_t pvqspin_spin_bound() const { return map.pvqspin_spin_bound; }
    bool word_wait(const uint32_t* word, uint32_t val) {
        const int64_t r = sys::word_wait(word, val);
        if (r == 0) waits++;
        else if (r == 1) wait_skips++;
        else wait_errors++;
        return r == 0;
    }
    void word_wake(const uint32_t* word) {
        wakes++;
        const int64_t r = sys::word_wake(word, ~0ull);  // every sleeper: a stale one re-checks
        if (r > 0) woken += uint64_t(r);
    }
    uint64_t yields = 0, waits = 0, wait_skips = 0, wait_errors = 0, wakes = 0, woken = 0;
    void spin_check(const spinlock::Lock&, uint64_t) {}
    uint32_t pticket_timeout_unit() const { return spinlock::kPticketTimeoutUnit; }
    // As the kernel's vcpu_off(): the word the host keeps for that vCPU in the shared
    // region (mapped read-only; 0 while no host writer runs), or KVM's steal-time `preempted`
    // byte (mapped read-only; absent under TCG).
    // Counted (asked, said), and printed at the end: what the preemption-aware locks were told.
    bool vcpu_is_off(uint32_t cpu) {
        if (cpu == kNoCpu) return false;
        asked++;
        const auto* area = reinterpret_cast<const VcpuStateArea*>(map.vcpu_state_base);  // 0: none
        const bool yes = vcpu_state_off_bits(area, cpu, map.cpu_count) != 0 || (steal(cpu).preempted & 1);
        said += yes;
        return yes;
    }
    uint64_t asked = 0, said = 0;
    uint64_t now() { return lockstat::read_clock(ClockSource(map.clock_source)); }
    CpuPerfData* perf() {
        return reinterpret_cast<CpuPerfData*>(map.perf_base + uint64_t(cpu_id) * map.perf_stride);
    }
    // timing=all: the kernel's CPUs say so in their perf data; these locks time as the kernel's.
    bool time_all() { return perf()->timing == uint32_t(lockstat::Timing::kAll); }
    const lockstat::SpinlockParams& params() { return *live_params; }
    lockstat::StealSample steal(uint32_t cpu) {
        if (!map.steal_base || cpu >= map.cpu_count) return {0, 0, 0};
        auto* st = reinterpret_cast<volatile kvm_steal_time_view*>(map.steal_base + 64ull * cpu);
        for (;;) {  // version is a seqcount: odd while the host writes
            uint32_t v1 = st->version;
            asm volatile("" ::: "memory");
            lockstat::StealSample s{st->steal, st->preempted, 1};
            asm volatile("" ::: "memory");
            if (!(v1 & 1) && st->version == v1) return s;
        }
    }
    uint64_t irq_save() { return 0; }   // ring 3: the kernel keeps its own records apart
    void irq_restore(uint64_t) {}

    // Trace sessions (spinlab/trace.h): this CPU's session shows in its counters' trace_groups.
    // The sampling rules run here, per thread (so "the Nth" counts this thread's
    // acquisitions). An event that fires goes into this thread's ring (the user-mode logger,
    // TraceUserRing: plain stores, no system call), which the kernel takes into the CPU's trace
    // buffers; a full ring costs one system call (kTraceRingDrain) per ring of events. Without
    // a ring (--trace-via syscall, or none mapped), or while the session wants call stacks on
    // spinlock events (which the kernel walks in the system call), each event is one system
    // call (kSysTraceSpinlock). Counted: events sampled, and how each went.
    locktrace::SampleCountdowns countdowns{};
    locktrace::UserRingWriter ring{};
    bool have_ring = false;
    bool drop_events = false;
    uint64_t sampled = 0, via_ring = 0, via_syscall = 0, ring_full = 0, ring_drains = 0;
    uint32_t trace_groups() { return __atomic_load_n(&perf()->trace_groups, __ATOMIC_ACQUIRE); }
    bool tracing() { return trace_groups() & (kTraceGroupSpinlock | kTraceGroupLongWait); }
    bool stacks_wanted() {
        return __atomic_load_n(&perf()->trace_stack_groups, __ATOMIC_RELAXED) &
               (kTraceGroupSpinlock | kTraceGroupLongWait);
    }
    // --event-cost: every release writes an event (1: through the ring, 2: by system call) or
    // none (0), whatever the sampling rules say; -1: the rules decide.
    int forced = -1;
    // At release, the lock still held (as the kernel writes its own locks' events): decide,
    // then write into the ring, or make the system call. Inlined into the lock path whatever
    // else calls it (--event-cost's batches made GCC keep it a call of its own, which changed
    // the code inside every traced hold).
    [[gnu::always_inline]] void trace_release(const spinlock::Lock& l, uint64_t release_tsc) {
        const locktrace::HoldFacts f = locktrace::hold_facts(l, release_tsc);
        uint8_t rules = locktrace::sample_release(countdowns, *live_params, trace_groups(),
                                                  map.long_wait_threshold, f);
        if (forced >= 0) [[unlikely]] rules = forced ? kTraceRuleAcquireSample : 0;
        if (rules == 0) return;
        sampled++;
        if (drop_events) return;  // --trace-via drop: what timing and sampling cost alone
        if (have_ring && !stacks_wanted() && forced != 2) {
            if (!locktrace::user_ring_write_spinlock(ring, l, f, release_tsc, rules)) {
                ring_drains++;
                sys::trace_ring(kTraceRingDrain);  // full: the kernel takes it now
                if (!locktrace::user_ring_write_spinlock(ring, l, f, release_tsc, rules)) {
                    ring_full++;
                    locktrace::user_ring_note_full(ring);  // counted lost by the kernel
                    return;
                }
            }
            via_ring++;
            return;
        }
        TraceSpinlockEvent e{};
        locktrace::fill_spinlock_payload(e, l, f, release_tsc, rules);
        sys::trace_spinlock(&e);
        via_syscall++;
    }
};

// --event-cost's pairs without a session: the same lock paths with tracing() false, so that
// what a running session adds to every acquisition (its stamps, arming and sampling decision)
// can be told from the pair itself. A type of its own, so lockbench's own paths stay as they are.
struct UntracedEnv : UserEnv {
    bool tracing() { return false; }
    void trace_release(const spinlock::Lock&, uint64_t) {}  // never armed
};

constexpr InstrumentLevel kLevel = lockstat::kBuildLevel;

uint64_t per_cpu = 1, nlocks = 1, cs_cycles = 200, think_cycles = 200, duration_ms = 5000,
         ops_limit = 0, rounds = 1, pause_ms = 1000;
const char* pattern = "same";
const char* trace_via = "ring";
const char* algorithm = "booted";
// --algorithm's choices besides booted: the ABI's lock= names (spinlab/sysinfo.h's table).
constexpr auto kAlgorithmChoices = join_names<joined_size(kLockAlgorithmNames)>(kLockAlgorithmNames, '|');
bool verify = false;
bool event_cost_mode = false;

constexpr int kMaxThreads = 256;
constexpr int kMaxLocks = 64;
struct alignas(64) PaddedLock {
    spinlock::Lock l;
};
PaddedLock locks[kMaxLocks];
char lock_names[kMaxLocks][16];

struct alignas(64) ThreadState {
    int index;
    uint32_t cpu;
    uint64_t ops;
    uint64_t acquired[kMaxLocks];
    uint64_t cycles;
    uint64_t preempted_asked, preempted_said;  // the lock's vcpu_is_off() calls, and "yes"
    uint64_t yields, waits, wait_skips, wait_errors, wakes, woken;  // UserEnv's counts
    uint64_t sampled, via_ring, via_syscall, ring_full, ring_drains;  // its trace counts
    const TraceUserRing* ring;  // the thread's ring (kept by its slot across rounds), or null
    spinlock::McsNode node;
};
ThreadState threads[kMaxThreads];
volatile bool stop;
volatile int started;
LockAlgorithm algo;

void spin_cycles(uint64_t n) {
    if (!n) return;
    uint64_t end = sys::rdtsc() + n;
    while (sys::rdtsc() < end) asm volatile("" ::: "memory");
}

void worker(void* p) {
    ThreadState& t = *static_cast<ThreadState*>(p);
    sys::pin(int(t.cpu));
    UserEnv env{t.cpu, algo};
    t.ring = nullptr;
    env.drop_events = strcmp(trace_via, "drop") == 0;
    if (strcmp(trace_via, "ring") == 0) {
        const int64_t a = sys::trace_ring(kTraceRingMap);
        auto* r = a > 0 ? reinterpret_cast<TraceUserRing*>(a) : nullptr;
        env.have_ring = r && locktrace::user_ring_writer_init(env.ring, r);
        if (env.have_ring) t.ring = r;
    }
    uint64_t seed = 0x9e3779b97f4a7c15ull * uint64_t(t.index + 1);
    bool same = strcmp(pattern, "same") == 0, spread = strcmp(pattern, "spread") == 0;
    __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
    uint64_t t0 = sys::rdtsc();
    while (!stop && (ops_limit == 0 || t.ops < ops_limit)) {
        uint64_t k;
        if (same) k = t.ops % nlocks;                 // everyone walks the same sequence
        else if (spread) k = uint64_t(t.index) % nlocks;  // each thread its own lock
        else {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            k = seed % nlocks;
        }
        lockstat::lock_acquire<kLevel>(locks[k].l, &t.node, env);
        spin_cycles(cs_cycles);
        lockstat::lock_release<kLevel>(locks[k].l, env);
        t.acquired[k]++;
        t.ops++;
        spin_cycles(think_cycles);
    }
    t.cycles = sys::rdtsc() - t0;
    t.preempted_asked = env.asked;
    t.preempted_said = env.said;
    t.yields = env.yields;
    t.waits = env.waits;
    t.wait_skips = env.wait_skips;
    t.wait_errors = env.wait_errors;
    t.wakes = env.wakes;
    t.woken = env.woken;
    t.sampled = env.sampled;
    t.via_ring = env.via_ring;
    t.via_syscall = env.via_syscall;
    t.ring_full = env.ring_full;
    t.ring_drains = env.ring_drains;
}

// Trace counts since the start, over every thread of every round so far.
struct TraceCounts {
    uint64_t sampled, via_ring, via_syscall, ring_full, ring_drains;
} trace_totals;

uint32_t class_of(uint64_t k) { return map.first_user_class + uint32_t(k % map.user_class_count); }

// --event-cost: what one ring-3 spinlock event costs its thread, in TSC cycles, through the
// thread's ring and through a system call (kSysTraceSpinlock), measured as the kernel's
// bench=traceevent measures a kernel-lock event: batches of uncontended acquire/release pairs of
// one lock with a session running, every release writing an event (ring, or system call),
// against batches whose releases write none (the hold is still timed and sampled: what a session
// costs a lock anyway). A fourth batch runs the same pairs as if no session ran (UntracedEnv), so
// that what the session adds to every pair, event or none, is measured too: the no-event batch
// less this one. The four batches run in a rotated order; each sample's per-pair
// difference over its batch; the median and a distribution-free 95 % interval of it (the order
// statistics n/2 -+ 0.98 sqrt(n)). Runs on CPU 0 in a circular session of its own (privileged):
// the buffers go round with no host draining them, so no write ever waits or is lost. Prints one
// "BENCH {json}" line; fails unless every ring event was written.
constexpr int kCostSamples = 401;
int64_t cost_ring[kCostSamples], cost_syscall[kCostSamples], cost_session[kCostSamples];

void sort_i64(int64_t* v, int n) {
    for (int i = 1; i < n; i++) {
        const int64_t x = v[i];
        int j = i - 1;
        for (; j >= 0 && v[j] > x; j--) v[j + 1] = v[j];
        v[j + 1] = x;
    }
}

int trace_command(TraceSessionInformation& s, TraceCommand c) {
    s.command = uint32_t(c);
    const uint32_t st = sys::set_system_information(uint32_t(InfoClass::kSystemPerformanceTraceInformation), &s, sizeof s);
    if (st != uint32_t(Status::kSuccess)) {
        eprintf("lockbench: --event-cost: trace %s: %s\n", c == TraceCommand::kStart ? "start" : "stop",
                status_name(Status(st)));
        return 1;
    }
    return 0;
}

// The batches without an event and through the ring hold kRingBatch pairs (a ring's worth,
// taken once).
constexpr int kRingBatch = 1000;

// Batches of acquire/release pairs of lock 0, each timed whole, in one of four modes: 0: armed,
// no event; 1: an event through the ring; 2: one by system call; 3: not armed (no session seen:
// tracing() false).
class CostBatches {
public:
    explicit CostBatches(UserEnv& env) : env_(env), l_(locks[0].l), untraced_{{0, algo}} {}

    uint64_t cycles(int n, int mode) {
        env_.forced = mode;
        const uint64_t t0 = lockstat::read_clock(ClockSource::kLfenceRdtsc);
        if (mode == 3) {
            for (int i = 0; i < n; i++) {
                lockstat::lock_acquire<kLevel>(l_, &node_, untraced_);
                lockstat::lock_release<kLevel>(l_, untraced_);
            }
            return lockstat::read_clock(ClockSource::kLfenceRdtsc) - t0;
        }
        for (int i = 0; i < n; i++) {
            lockstat::lock_acquire<kLevel>(l_, &node_, env_);
            lockstat::lock_release<kLevel>(l_, env_);
        }
        // The kernel's take of the ring's records is part of their cost: in this batch, by the
        // system call a full ring makes (one per batch of kRingBatch events here; a running
        // program makes one per 1,024).
        if (mode == 1) sys::trace_ring(kTraceRingDrain);
        return lockstat::read_clock(ClockSource::kLfenceRdtsc) - t0;
    }

    // Warms up (TCG translates the paths on first use), then the pairs of a batch by system
    // call: about 1 ms of them (4..1,000: under nested KVM a system call costs milliseconds).
    int syscall_batch(uint64_t hz) {
        for (uint64_t end = sys::rdtsc() + hz; sys::rdtsc() < end;)
            for (int m = 0; m < 4; m++) cycles(4, m);
        const uint64_t probe = cycles(4, 2) / 4 + 1;
        const uint64_t want = hz / 1000 / probe;
        return int(want < 4 ? 4 : want > 1000 ? 1000 : want);
    }

private:
    UserEnv& env_;
    spinlock::Lock& l_;
    spinlock::McsNode node_;
    UntracedEnv untraced_;
};

// The samples: cost_ring, cost_syscall and cost_session (per pair), and the no-event and
// untraced batches' cycles summed.
struct CostSamples {
    int n = 0;
    uint64_t none_sum = 0, untraced_sum = 0;
};

CostSamples sample_costs(CostBatches& batches, int batch, uint64_t hz) {
    CostSamples r;
    int& n = r.n;
    for (const uint64_t end = sys::rdtsc() + 10 * hz; n < kCostSamples && (n < 11 || sys::rdtsc() < end); n++) {
        uint64_t c[4];
        for (int k = 0; k < 4; k++) {  // rotated: none, ring, syscall, untraced; ring, syscall, ...
            const int m = (n + k) % 4;
            c[m] = batches.cycles(m == 2 ? batch : kRingBatch, m);
        }
        cost_ring[n] = (int64_t(c[1]) - int64_t(c[0])) / kRingBatch;
        cost_syscall[n] = int64_t(c[2]) / batch - int64_t(c[0]) / kRingBatch;
        cost_session[n] = (int64_t(c[0]) - int64_t(c[3])) / kRingBatch;
        r.none_sum += c[0];
        r.untraced_sum += c[3];
    }
    return r;
}

// The BENCH line: each cost's median and the 95 % interval around it (sorts the samples).
void print_event_cost(const CostSamples& s, uint64_t hz, int batch, uint64_t ring_events, uint64_t ring_written,
                      uint64_t ring_full, uint64_t ring_rejected) {
    const int n = s.n;
    sort_i64(cost_ring, n);
    sort_i64(cost_syscall, n);
    sort_i64(cost_session, n);
    int half = 0;
    while ((2 * half) * (2 * half) < 4 * 98 * 98 * n / 10000) half++;  // ceil(0.98 sqrt(n))
    const int lo = n / 2 - half < 0 ? 0 : n / 2 - half, hi = n / 2 + half >= n ? n - 1 : n / 2 + half;
    printf("BENCH {\"bench\":\"ringevent\",\"clock\":\"%s\",\"cpus\":%u,\"tsc_hz\":%lu,\"syscall_batch\":%d,"
           "\"samples\":%d,\"cycles_per_pair_without_event\":%lu,\"ring_cycles_per_event\":%ld,"
           "\"ring_ci95_low\":%ld,\"ring_ci95_high\":%ld,\"syscall_cycles_per_event\":%ld,"
           "\"syscall_ci95_low\":%ld,\"syscall_ci95_high\":%ld,\"ring_events\":%lu,\"ring_written\":%lu,"
           "\"ring_batch\":%d,\"ring_full\":%lu,\"ring_rejected\":%lu,\"cycles_per_pair_untraced\":%lu,"
           "\"session_cycles_per_pair\":%ld,\"session_ci95_low\":%ld,\"session_ci95_high\":%ld}\n",
           clock_source_name(ClockSource(map.clock_source)), map.cpu_count, hz, batch, n,
           s.none_sum / (uint64_t(n) * kRingBatch), cost_ring[n / 2], cost_ring[lo], cost_ring[hi],
           cost_syscall[n / 2], cost_syscall[lo], cost_syscall[hi], ring_events, ring_written, kRingBatch,
           ring_full, ring_rejected, s.untraced_sum / (uint64_t(n) * kRingBatch), cost_session[n / 2],
           cost_session[lo], cost_session[hi]);
}

int event_cost() {
    sys::pin(0);
    TraceSessionInformation s = locktrace::default_session_params();
    s.enable_flags = kTraceGroupSpinlock;
    s.logger_mode = uint32_t(TraceLoggerMode::kCircular);
    s.buffer_size = 65536;
    s.minimum_buffers = s.maximum_buffers = 8;
    s.flush_timer_ms = 0;
    if (trace_command(s, TraceCommand::kStart)) return 1;
    UserEnv env{0, algo};
    const int64_t a = sys::trace_ring(kTraceRingMap);
    env.have_ring = a > 0 && locktrace::user_ring_writer_init(env.ring, reinterpret_cast<TraceUserRing*>(a));
    const auto* ring = reinterpret_cast<const TraceUserRing*>(a);
    if (!env.have_ring || !env.tracing()) {
        eprintf("lockbench: --event-cost: %s\n", env.have_ring ? "the session is not armed on CPU 0" : "no ring");
        trace_command(s, TraceCommand::kStop);
        return 1;
    }
    CostBatches batches(env);
    const uint64_t hz = sys::tsc_hz();
    const int batch = batches.syscall_batch(hz);
    const uint64_t ring_before = env.via_ring, written_before = ring->written;
    const CostSamples samples = sample_costs(batches, batch, hz);
    env.forced = -1;
    sys::trace_ring(kTraceRingDrain);
    const uint64_t ring_events = env.via_ring - ring_before, ring_written = ring->written - written_before;
    TraceSessionInformation stop = s;
    const int stopped = trace_command(stop, TraceCommand::kStop);
    print_event_cost(samples, hz, batch, ring_events, ring_written, env.ring_full, ring->rejected);
    if (ring_written != ring_events || ring->rejected != 0) {
        eprintf("lockbench: --event-cost: %lu ring events, %lu written by the kernel\n", ring_events, ring_written);
        return 1;
    }
    return stopped;
}

bool query_class_acquisitions(uint32_t cls, uint64_t* out) {
    struct {
        SpinlockPerfRequest head;
        SpinlockPerfRecord rec;
    } q{};
    q.head.cpu = kAllCpus;
    q.head.lock_class = cls;
    q.head.flags = kPerfMergeCpus;
    uint32_t len = 0;
    uint32_t st = sys::query_system_information(uint32_t(InfoClass::kSpinlabSpinlockPerfData), &q, sizeof q, &len);
    if (st != uint32_t(Status::kSuccess)) {
        eprintf("lockbench: query class %u: %s\n", cls, status_name(Status(st)));
        return false;
    }
    *out = q.rec.perf.acquisitions;
    if (!lockstat::wait_invariant_holds(q.rec.perf)) {
        eprintf("lockbench: class %u: uncontended + waits + overflow != acquisitions\n", cls);
        return false;
    }
    return true;
}

// Starts the round's n threads (tids[i]); false, with every started one joined, when one cannot
// start.
bool start_threads(int n, int* tids) {
    for (int i = 0; i < n; i++) {
        threads[i].index = i;
        threads[i].cpu = uint32_t(i % sys::cpu_count());
        tids[i] = thread_start(worker, &threads[i]);
        if (tids[i] < 0) {
            eprintf("lockbench: cannot start thread %d: %s\n", i, error_name(tids[i]));
            for (int j = 0; j < i; j++) sys::thread_join(tids[j]);
            return false;
        }
    }
    return true;
}

// A timed round (no --ops): the round's time, then the threads are told to stop.
void run_for_duration(int n) {
    if (duration_ms == 0)
        for (;;) sys::sleep_us(1000000);  // until the VM is stopped
    // The run time counts from when every thread runs: on a busy host, under nested KVM,
    // starting them took longer than a 300 ms --verify run (CI: three of four threads had
    // not started when it ended, so no waiter ever slept).
    while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < n) sys::sleep_us(1000);
    sys::sleep_us(duration_ms * 1000);
    stop = true;
}

// The round's threads' counts, summed as they are joined (their trace counts into trace_totals
// as well).
struct RoundCounts {
    uint64_t ops, per_lock[kMaxLocks], asked, said, yields, waits, wait_skips, wait_errors, wakes, woken, sampled;
};

RoundCounts join_threads(int n, const int* tids) {
    RoundCounts r{};
    const uint64_t hz = sys::tsc_hz();
    for (int i = 0; i < n; i++) {
        sys::thread_join(tids[i]);
        ThreadState& t = threads[i];
        uint64_t ms = t.cycles / (hz / 1000 ? hz / 1000 : 1);
        if (rounds == 1)
            printf("lockbench: thread %3d cpu %2u: %10lu ops in %6lu ms, %10lu ops/s\n", i, t.cpu, t.ops, ms,
                   ms ? t.ops * 1000 / ms : 0);
        r.ops += t.ops;
        r.asked += t.preempted_asked;
        r.said += t.preempted_said;
        r.yields += t.yields;
        r.waits += t.waits;
        r.wait_skips += t.wait_skips;
        r.wait_errors += t.wait_errors;
        r.wakes += t.wakes;
        r.woken += t.woken;
        for (uint64_t k = 0; k < nlocks; k++) r.per_lock[k] += t.acquired[k];
        r.sampled += t.sampled;
        trace_totals.sampled += t.sampled;
        trace_totals.via_ring += t.via_ring;
        trace_totals.via_syscall += t.via_syscall;
        trace_totals.ring_full += t.ring_full;
        trace_totals.ring_drains += t.ring_drains;
    }
    return r;
}

// The rings' own counts, as the kernel keeps them (each thread's ring was taken when the
// thread left its CPU for the last time, before its join returned). A ring belongs to a
// thread slot and lives across rounds, so each is counted once, by address.
struct RingCounts {
    uint64_t written, lost, rejected, discarded;
};

RingCounts ring_counts(int n) {
    RingCounts r{};
    for (int i = 0; i < n; i++) {
        const TraceUserRing* ring = threads[i].ring;
        bool seen = false;
        for (int j = 0; j < i && !seen; j++) seen = threads[j].ring == ring;
        if (!ring || seen) continue;
        r.written += ring->written;
        r.lost += ring->lost;
        r.rejected += ring->rejected;
        r.discarded += ring->discarded;
    }
    return r;
}

// The round's lines: its operations, the lock's own counts, and the trace's.
void print_round(const char* head, uint64_t round, const RoundCounts& r, uint64_t clock_start, uint64_t clock_end,
                 const RingCounts& rings) {
    // Counts are totals since the start; a round's rate is the round's own.
    uint64_t wall_ms = ops_limit ? 0 : duration_ms * (rounds == 1 ? 1 : round);
    printf("%s total %lu ops%s", head, r.ops, wall_ms ? "" : "\n");
    if (wall_ms) printf(", %lu ops/s\n", r.ops * 1000 / wall_ms);
    if (r.asked)  // only the preemption-aware locks ask (pticket, pvmcs)
        printf("%s vcpu_is_off: %lu of %lu answers said preempted (host words %s, steal time %s)\n", head,
               r.said, r.asked, map.vcpu_state_base ? "mapped" : "absent", map.steal_base ? "mapped" : "absent");
    if (r.yields) printf("%s yields: %lu\n", head, r.yields);  // pv and pvmcs give their vCPU away
    if (r.waits || r.wait_skips || r.wakes)  // pvqspin: slept in the kernel, and woken by the releaser
        printf("%s word waits: %lu slept, %lu found the word changed; word wakes: %lu calls, %lu threads woken\n",
               head, r.waits, r.wait_skips, r.wakes, r.woken);
    if (trace_totals.sampled) {
        // This round's events (compare with the trace's events of this process stamped in the
        // round's clock window), then the counts since the start, the kernel's rings' included.
        printf("%s trace round: %lu events sampled, clock %lu..%lu\n", head, r.sampled, clock_start, clock_end);
        printf("%s trace: %lu events sampled, %lu through rings, %lu by system call; rings: %lu full, "
               "%lu drains asked; kernel took %lu written, %lu lost, %lu rejected, %lu discarded\n",
               head, trace_totals.sampled, trace_totals.via_ring, trace_totals.via_syscall, trace_totals.ring_full,
               trace_totals.ring_drains, rings.written, rings.lost, rings.rejected, rings.discarded);
    }
}

// Each workload class's acquisitions, and with --verify the kernel's count of them beside;
// returns the number of classes that disagreed.
int check_classes(const char* head, const uint64_t* per_lock) {
    int bad = 0;
    uint64_t per_class[kMaxLockClasses] = {};
    for (uint64_t k = 0; k < nlocks; k++) per_class[class_of(k)] += per_lock[k];
    for (uint32_t c = 0; c < kMaxLockClasses; c++) {
        if (!per_class[c]) continue;
        printf("%s class user%u (id %u): %lu acquisitions\n", head, c - map.first_user_class, c, per_class[c]);
        if (verify) {
            uint64_t counted = 0;
            if (!query_class_acquisitions(c, &counted)) bad++;
            else if (counted != per_class[c]) {
                eprintf("%s class id %u: the kernel counted %lu acquisitions, lockbench made %lu\n",
                        head, c, counted, per_class[c]);
                bad++;
            } else {
                printf("%s class id %u: kernel counters agree (%lu)\n", head, c, counted);
            }
        }
    }
    return bad;
}

// One round: start the threads, let them run, join them, print (and with --verify check) the
// counts so far. Returns the number of classes that disagreed, or -1 when a thread cannot start.
int run_round(int n, uint64_t round) {
    int tids[kMaxThreads];
    stop = false;
    __atomic_store_n(&started, 0, __ATOMIC_SEQ_CST);
    // The round's window on the boot clock (clock=, the trace's timestamps): every event a
    // thread of this round sampled is stamped inside it.
    const uint64_t clock_start = lockstat::read_clock(ClockSource(map.clock_source));
    if (!start_threads(n, tids)) return -1;
    if (ops_limit == 0) run_for_duration(n);
    const RoundCounts counts = join_threads(n, tids);
    const uint64_t clock_end = lockstat::read_clock(ClockSource(map.clock_source));
    char head[32] = "lockbench:";
    if (rounds != 1) format(head, sizeof head, "lockbench: round %lu:", round);
    print_round(head, round, counts, clock_start, clock_end, ring_counts(n));
    int bad = 0;
    if (counts.wait_errors) {
        eprintf("%s %lu word waits failed (kSysWordWait returned an error)\n", head, counts.wait_errors);
        bad++;
    }
    return bad + check_classes(head, counts.per_lock);
}

}  // namespace

int main(int argc, char** argv) {
    const int ncpu = sys::cpu_count();
    const Opt opts[] = {
        u64_opt("--threads-per-cpu", &per_cpu, "threads pinned to each CPU (default 1)", 1, kMaxThreads / ncpu),
        u64_opt("--locks", &nlocks, "number of locks K (default 1, at most 64)", 1, kMaxLocks),
        choice_opt("--pattern", &pattern, "same|spread|random", "which lock each acquisition takes (default same)"),
        u64_opt("--cs-cycles", &cs_cycles, "critical section, TSC cycles (default 200)"),
        u64_opt("--think-cycles", &think_cycles, "between acquisitions (default 200)"),
        u64_opt("--duration-ms", &duration_ms, "run time; 0 = until the VM stops (default 5000)"),
        u64_opt("--ops", &ops_limit, "stop each thread after N acquisitions instead"),
        text_opt("--algorithm", &algorithm, "a lock= name (the lock algorithm), or booted (lock=; default)"),
        flag_opt("--verify", &verify, "reset the workload classes first, compare after"),
        flag_opt("--event-cost", &event_cost_mode,
                 "measure the cycles of one ring-3 spinlock event (ring, system call), and what a session adds to "
                 "every acquisition, in a session of its own"),
        u64_opt("--rounds", &rounds, "timed rounds, counts printed after each; 0 = until the VM stops (default 1)"),
        u64_opt("--pause-ms", &pause_ms, "between rounds, no workload thread runs (default 1000)"),
        choice_opt("--trace-via", &trace_via, "ring|syscall|drop",
                   "how sampled spinlock events reach the trace: the thread's ring (default), a system call "
                   "each, or not at all (drop: a session's hold timing and sampling alone, for benchmarks)"),
    };
    if (!parse_opts(argc, argv, opts, "Threads pinned to every CPU contend for K spinlocks; the kernel counts the waits."))
        return 2;
    int64_t r = sys::call(kSysMapLockstat, uint64_t(&map));
    if (r < 0) {
        eprintf("lockbench: cannot map the lock counters: %s%s\n", error_name(r),
                r == -kErrPerm ? " (lockbench must run privileged)" : "");
        return 1;
    }
    const int n = int(per_cpu) * ncpu;
    algo = LockAlgorithm(map.algorithm);
    if (strcmp(algorithm, "booted") != 0) {
        bool ok = false;
        for (uint32_t a = 0; a < kLockAlgorithmCount; a++)
            if (strcmp(algorithm, lock_algorithm_name(LockAlgorithm(a))) == 0) algo = LockAlgorithm(a), ok = true;
        if (!ok) {
            eprintf("lockbench: --algorithm '%s': choose %s or booted\n", algorithm, kAlgorithmChoices.text);
            return 2;
        }
    }
    live_params = reinterpret_cast<const lockstat::SpinlockParams*>(map.params_base);
    if (!live_params) {
        eprintf("lockbench: the kernel mapped no tracing parameters (LockstatMapping::params_base is 0)\n");
        return 1;
    }
    for (uint64_t k = 0; k < nlocks; k++) {
        format(lock_names[k], sizeof lock_names[k], "bench%lu", k);
        spinlock::lock_init(locks[k].l, lock_names[k], class_of(k));
    }
    if (event_cost_mode) return event_cost();
    if (verify) {
        for (uint64_t k = 0; k < nlocks && k < map.user_class_count; k++) {
            ResetRequest rr{kAllCpus, class_of(k)};
            uint32_t st = sys::set_system_information(uint32_t(InfoClass::kSpinlabResetCounters), &rr, sizeof rr);
            if (st) {
                eprintf("lockbench: reset: %s\n", status_name(Status(st)));
                return 1;
            }
        }
    }
    printf("lockbench: %d threads on %d CPUs, %lu locks (%s), cs %lu cycles, think %lu cycles, "
           "algorithm %s, %s\n", n, ncpu, nlocks, pattern, cs_cycles, think_cycles,
           lock_algorithm_name(algo), duration_ms ? "timed" : "until stopped");
    if (rounds != 1 && (ops_limit || duration_ms == 0)) {
        eprintf("lockbench: --rounds %lu needs a timed round: --duration-ms above 0 and no --ops\n", rounds);
        return 2;
    }
    int bad = 0;
    for (uint64_t round = 1; rounds == 0 || round <= rounds; round++) {
        if (rounds != 1) {
            if (round > 1) sys::sleep_us(pause_ms * 1000);
            printf("lockbench: round %lu start\n", round);  // before any thread of the round exists
        }
        int r = run_round(n, round);
        if (r < 0) return 1;
        bad += r;
    }
    return bad ? 1 : 0;
}
