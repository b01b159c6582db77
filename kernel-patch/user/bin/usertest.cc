// usertest: user-mode checks run by the kernel's `user` self-test suite (selftest/user_test.cc)
// and by hand from sh. Each mode exits 0 when every check passed, else prints what failed.
//   usertest cpus | parallel | threads | thread-limit | badptr | fuzz [N] [seed] | privilege | args A B C |
//            spawn-unpriv | params | word-wait | ring [N] | ring-unpriv | ring-scribble [ms] | all
#include "../lib/ulib.h"
#include "lockstat/clock.h"
#include "locktrace/user_ring.h"
#include "spinlab/sysinfo.h"

namespace {

using namespace spinlab;
int failures;

#define CHECK(cond)                                                         \
    do {                                                                    \
        if (!(cond)) {                                                      \
            eprintf("usertest: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                     \
        }                                                                   \
    } while (0)

constexpr uint64_t kKernelAddr = 0x100000;                 // the kernel image
constexpr uint64_t kUnmapped = 0x9000000000ull;            // user range, nothing mapped
constexpr uint64_t kNonCanonical = 0xffff800000001000ull;

// Pin to each CPU in turn and find ourselves there.
void cpus() {
    int n = sys::cpu_count();
    for (int c = 0; c < n; c++) {
        CHECK(sys::pin(c) == 0);
        for (int k = 0; k < 3; k++) {
            CHECK(sys::cpu_number() == c);
            sys::yield();
        }
    }
    CHECK(sys::pin(-1) == 0);
}

// One thread per CPU, pinned; each waits (spinning, never yielding) until all have arrived.
// They can all arrive only if they run at the same time on different CPUs.
volatile int arrived;
volatile int seen_cpu[64];

void parallel_worker(void* p) {
    int i = int(uint64_t(p));
    sys::pin(i);
    seen_cpu[i] = sys::cpu_number();
    __atomic_add_fetch(&arrived, 1, __ATOMIC_SEQ_CST);
    uint64_t deadline = sys::rdtsc() + sys::tsc_hz() * 10;
    while (__atomic_load_n(&arrived, __ATOMIC_SEQ_CST) < sys::cpu_count() && sys::rdtsc() < deadline)
        asm volatile("pause");
}

void parallel() {
    int n = sys::cpu_count();
    arrived = 0;
    int tids[64];
    for (int i = 0; i < n; i++) {
        tids[i] = thread_start(parallel_worker, reinterpret_cast<void*>(uint64_t(i)));
        CHECK(tids[i] > 0);
    }
    for (int i = 0; i < n; i++) CHECK(sys::thread_join(tids[i]) == 0);
    CHECK(arrived == n);
    for (int i = 0; i < n; i++) CHECK(seen_cpu[i] == i);
}

ULock counter_lock;
volatile uint64_t counter;

void count_worker(void*) {
    for (int i = 0; i < 5000; i++) {
        counter_lock.lock();
        counter = counter + 1;
        counter_lock.unlock();
    }
}

void exit_with_7(void*) { sys::thread_exit(7); }

void threads() {
    counter = 0;
    int tids[16];
    for (int& t : tids) t = thread_start(count_worker, nullptr);
    for (int t : tids) CHECK(sys::thread_join(t) == 0);
    CHECK(counter == 16 * 5000);
    int t = thread_start(exit_with_7, nullptr);
    CHECK(sys::thread_join(t) == 7);
    CHECK(sys::thread_join(t) == -kErrNoEnt);   // joined already
    CHECK(sys::thread_join(12345) == -kErrNoEnt);
}

// A process has at most kMaxProcThreads threads: the next create is refused with -ENOMEM (and
// the kernel gives back what it prepared for it), and every created thread still runs and joins.
volatile bool release_all;
// Sleeps, not yields, and long: each wake takes the scheduler's lock, and with a fair lock
// (ticket, mcs) on an oversubscribed host every hand-over to a descheduled vCPU waits for the
// host to run it, so the lock serves only a few hundred acquisitions a second there. 63 threads
// yielding in a loop made this test take 44-54 s at 4 vCPUs; waking every 50 ms (1,260 wakes/s)
// still 24-68 s with a hog on one of 2 host cores, and every 500 ms 24-42 s. Every 2 s: 32 wakes/s.
void wait_for_release(void*) {
    while (!release_all) sys::sleep_us(2000 * 1000);
}

void thread_limit() {
    static int tids[128];
    int n = 0;
    release_all = false;
    int64_t r = 0;
    while (n < 128) {
        r = thread_start(wait_for_release, nullptr, 16 * 1024);
        if (r < 0) break;
        tids[n++] = int(r);
    }
    CHECK(r == -kErrNoMem);
    CHECK(n == 63);  // 64 slots, one is the main thread
    release_all = true;
    for (int i = 0; i < n; i++) CHECK(sys::thread_join(tids[i]) == 0);
    int t = thread_start(wait_for_release, nullptr, 16 * 1024);  // slots are free again
    CHECK(t > 0);
    CHECK(sys::thread_join(t) == 0);
}

// Hostile pointers and lengths each get an error status.
void badptr() {
    char buf[16] = "-ok\n";
    CHECK(sys::write(1, reinterpret_cast<void*>(kKernelAddr), 10) == -kErrFault);
    CHECK(sys::write(1, reinterpret_cast<void*>(kUnmapped), 10) == -kErrFault);
    CHECK(sys::write(1, reinterpret_cast<void*>(kNonCanonical), 1) == -kErrFault);
    CHECK(sys::write(1, buf, 1ull << 62) == -kErrFault);
    CHECK(sys::write(1, buf + 1, 3) == 3);                    // misaligned is fine: "ok\n"
    CHECK(sys::write(7, buf, 3) == -kErrInval);
    CHECK(sys::read(0, reinterpret_cast<void*>(kKernelAddr), 10) == -kErrFault);
    const char* argv[] = {"hello", nullptr};
    CHECK(sys::spawn(reinterpret_cast<const char*>(kKernelAddr), argv) == -kErrFault);
    CHECK(sys::spawn("/bin/no-such-program", argv) == -kErrNoEnt);
    CHECK(sys::spawn("/bin/hello", reinterpret_cast<const char* const*>(kUnmapped)) == -kErrFault);
    const char* bad_argv[] = {"hello", reinterpret_cast<const char*>(kKernelAddr), nullptr};
    CHECK(sys::spawn("/bin/hello", bad_argv) == -kErrFault);
    CHECK(sys::spawn("/bin/hello", argv, 0x80) == -kErrInval);
    CHECK(sys::wait(99999, nullptr) == -kErrNoEnt);
    int64_t pid = sys::spawn("/bin/hello", argv);
    CHECK(pid > 0);
    CHECK(sys::wait(int(pid), reinterpret_cast<int32_t*>(kKernelAddr)) == -kErrFault);
    CHECK(sys::thread_create(reinterpret_cast<void (*)(void*)>(kKernelAddr), nullptr, buf) == -kErrFault);
    CHECK(sys::pin(9999) == -kErrInval);
    CHECK(sys::map_anon(0) == nullptr);
    CHECK(sys::call(999) == -kErrNoSys);
    CHECK(sys::sleep_us(1ull << 50) == -kErrInval);
}

uint64_t xorshift(uint64_t& s) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
}

// Many thousands of calls with hostile arguments: each must come back with a status. Calls
// that would end or block this process are given only arguments that must be refused.
void fuzz(uint64_t n, uint64_t seed) {
    char* valid = static_cast<char*>(sys::map_anon(8192));
    const uint64_t pool[] = {0, 1, kKernelAddr, 0xfee00000, kUnmapped, kNonCanonical, ~0ull,
                             uint64_t(valid) + 4093, uint64_t(valid), 1ull << 63, 0x7ffffffff000,
                             kUserBase - 1, kUserLimit - 1, 4096, uint64_t(-4096)};
    constexpr int kPool = sizeof pool / sizeof pool[0];
    uint64_t answered = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t a = pool[xorshift(seed) % kPool], b = pool[xorshift(seed) % kPool];
        uint64_t c = (xorshift(seed) & 1) ? pool[xorshift(seed) % kPool] : xorshift(seed);
        uint64_t nr = xorshift(seed) % 22;
        int64_t r;
        switch (nr) {
        case kSysExit: case kSysThreadExit: case kSysYield:
            continue;  // would end the test, or has no arguments
        case kSysWrite:  // keep the console readable: only hostile buffers
            r = sys::call(nr, a & 3, (b == uint64_t(valid) || b == uint64_t(valid) + 4093) ? kKernelAddr : b, c);
            break;
        case kSysRead:  // fd 0 with a valid buffer would wait for a console line
            r = sys::call(nr, 0, kKernelAddr, b);
            break;
        case kSysSleep:
            r = sys::call(nr, (1ull << 40) + a);
            break;
        case kSysThreadCreate:  // a runnable thread at a random address would fault
            r = sys::call(nr, kKernelAddr + (a & 0xffff), b, c);
            break;
        case kSysMapAnon:
            r = sys::call(nr, (1ull << 33) + a);
            break;
        case kSysSpawn:
            r = sys::call(nr, a, b, c);
            if (r > 0) sys::wait(int(r), nullptr);
            break;
        default:
            r = sys::call(nr, a, b, c, xorshift(seed));
        }
        if (!(r >= 0 || (r <= -kErrNoSys && r >= -kErrChild) || nr >= 19)) {
            eprintf("usertest: fuzz call %lu(%lx, %lx, %lx) returned %ld\n", nr, a, b, c, r);
            failures++;
        }
        answered++;
    }
    printf("usertest: fuzz: %lu calls answered\n", answered);
    sys::pin(-1);
}

// The user-mode logger (kSysTraceRing), under the session the kernel's trace suite started
// (selftest/trace_test.cc reads the trace area afterwards): N spinlock records through this
// thread's ring, the lock's class id carrying the record's number (0..N-1), asking the kernel
// to take the ring whenever it is full; then two records a kernel must refuse (a stamp from
// the future, another event's size), and a take. The rest the kernel takes as the process ends.
void ring(uint64_t n) {
    LockstatMapping m;
    CHECK(sys::call(kSysMapLockstat, uint64_t(&m)) == 0);
    const int64_t a = sys::trace_ring(kTraceRingMap);
    CHECK(a > 0);
    if (a <= 0) return;
    CHECK(sys::trace_ring(kTraceRingMap) == a);  // one ring per thread
    auto* r = reinterpret_cast<TraceUserRing*>(a);
    CHECK(r->capacity == kTraceUserRingCapacity && r->record_size == sizeof(TraceSpinlockEvent));
    locktrace::UserRingWriter w;
    CHECK(locktrace::user_ring_writer_init(w, r));
    const auto clock = ClockSource(m.clock_source);
    uint64_t drains = 0;
    for (uint64_t i = 0; i < n; i++) {
        spinlock::Lock l{};
        l.class_id = uint32_t(i);
        const uint64_t now = lockstat::read_clock(clock);
        l.trace.acquire_tsc = now;
        const locktrace::HoldFacts f = locktrace::hold_facts(l, now);
        if (!locktrace::user_ring_write_spinlock(w, l, f, now, kTraceRuleAcquireSample)) {
            drains++;
            // The take may find the ring empty: a tick (or a switch) can take it between the
            // failed write and the call, most often when the host deschedules this vCPU there
            // (seen once at 4 vCPUs under TCG on a busy 2-core host). The write after it is the check.
            CHECK(sys::trace_ring(kTraceRingDrain) >= 0);
            CHECK(locktrace::user_ring_write_spinlock(w, l, f, now, kTraceRuleAcquireSample));
        }
    }
    CHECK(drains == (n > kTraceUserRingCapacity ? (n - 1) / kTraceUserRingCapacity : 0));
    const uint64_t rejected = r->rejected;
    for (int bad = 0; bad < 2; bad++) {
        TraceSpinlockEvent* e = locktrace::user_ring_reserve(w);
        CHECK(e != nullptr);
        if (!e) return;
        *e = TraceSpinlockEvent{};
        const uint64_t t = lockstat::read_clock(clock);
        locktrace::fill_header(e->h, sizeof *e, TraceEventType::kSpinlock, 0, 0, 0, bad ? t : t + (1ull << 50));
        if (bad) e->h.size = 48;
        e->release_tsc = e->h.tsc;
        e->rules = kTraceRuleAcquireSample;
        locktrace::user_ring_commit(w);
    }
    CHECK(sys::trace_ring(kTraceRingDrain) >= 0);  // a tick may have taken the two already (above)
    CHECK(r->rejected == rejected + 2);
    CHECK(r->written + r->lost >= n - kTraceUserRingCapacity);
    printf("usertest: ring: %lu records, %lu drains asked; written %lu, lost %lu, rejected %lu so far\n", n,
           drains, r->written, r->lost, r->rejected);
}

// A process that scribbles on its own ring while the kernel takes it (the trace suite checks
// that nothing unchecked reached the streams and that other processes' events are whole): one
// thread writes well-formed records, garbage records, leaps of head and of full, and asks the
// kernel to take the ring; a second thread, on another CPU when there is one, writes random
// bytes anywhere in the ring. For `ms` milliseconds. Fails unless the kernel refused some.
struct Scribble {
    TraceUserRing* ring;
    volatile bool stop;
    uint64_t seed;
};

uint64_t next_random(uint64_t& x) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
}

void scribbler(void* p) {
    auto& s = *static_cast<Scribble*>(p);
    sys::pin(sys::cpu_count() > 1 ? 1 : 0);
    auto* bytes = reinterpret_cast<volatile uint8_t*>(s.ring);
    const uint64_t size = locktrace::user_ring_bytes(kTraceUserRingCapacity);
    uint64_t x = s.seed;
    while (!s.stop) bytes[next_random(x) % size] = uint8_t(next_random(x));
}

void ring_scribble(uint64_t ms) {
    LockstatMapping m;
    CHECK(sys::call(kSysMapLockstat, uint64_t(&m)) == 0);
    sys::pin(0);
    const int64_t a = sys::trace_ring(kTraceRingMap);
    CHECK(a > 0);
    if (a <= 0) return;
    auto* r = reinterpret_cast<TraceUserRing*>(a);
    locktrace::UserRingWriter w;
    CHECK(locktrace::user_ring_writer_init(w, r));
    Scribble s{r, false, 0x9e3779b97f4a7c15ull};
    const int tid = thread_start(scribbler, &s);
    CHECK(tid > 0);
    const auto clock = ClockSource(m.clock_source);
    const uint64_t end = sys::rdtsc() + sys::tsc_hz() / 1000 * ms;
    uint64_t x = 12345, asked = 0;
    while (sys::rdtsc() < end) {
        const uint64_t what = next_random(x) % 16;
        TraceSpinlockEvent* e = locktrace::user_ring_reserve(w);
        if (what < 8 && e) {  // a well-formed record
            spinlock::Lock l{};
            l.class_id = uint32_t(next_random(x));
            const uint64_t now = lockstat::read_clock(clock);
            l.trace.acquire_tsc = now;
            locktrace::user_ring_write_spinlock(w, l, locktrace::hold_facts(l, now), now, kTraceRuleAcquireSample);
        } else if (what < 12 && e) {  // garbage
            auto* q = reinterpret_cast<uint64_t*>(e);
            for (uint32_t i = 0; i < sizeof *e / 8; i++) q[i] = next_random(x);
            locktrace::user_ring_commit(w);
        } else if (what == 12) {
            r->head += next_random(x) % 4096;  // a leap
        } else if (what == 13) {
            r->full += next_random(x) % 3 == 0 ? next_random(x) : 1;
        } else if (what == 14) {
            r->tail = next_random(x);  // the kernel's part: it keeps its own copy
        } else {
            asked++;
            CHECK(sys::trace_ring(kTraceRingDrain) >= 0);
        }
        if (!e) {
            asked++;
            sys::trace_ring(kTraceRingDrain);
            w.head = r->head;  // whatever the ring says now: the kernel re-checks it anyway
        }
    }
    s.stop = true;
    sys::thread_join(tid);
    CHECK(sys::trace_ring(kTraceRingDrain) >= 0);
    CHECK(r->rejected > 0);
    printf("usertest: ring-scribble: %lu takes asked; the kernel wrote %lu, lost %lu, rejected %lu, discarded %lu\n",
           asked, r->written, r->lost, r->rejected, r->discarded);
}

// Unprivileged: no counters, and so no ring.
void ring_unpriv() {
    LockstatMapping m;
    CHECK(sys::call(kSysMapLockstat, uint64_t(&m)) == -kErrPerm);
    CHECK(sys::trace_ring(kTraceRingMap) == -kErrPerm);
    CHECK(sys::trace_ring(kTraceRingDrain) == -kErrInval);  // no ring to take
}

void spawn_unpriv() {
    const char* argv[] = {"usertest", "privilege", nullptr};
    int64_t pid = sys::spawn("/bin/usertest", argv, kSpawnUnprivileged);
    CHECK(pid > 0);
    int32_t code = -1;
    CHECK(sys::wait(int(pid), &code) == pid);
    CHECK(code == 1);  // the child saw itself unprivileged
}

// The tracing parameters where ring-3 locks read them (kSysMapLockstat's params_base, the
// kernel's live words, read-only): they match the query, a set through the system call (the
// path spinstat takes) shows there at once, and the old values are restored. Privileged.
uint32_t set_spinlock_params(const EventTraceSpinlockInformation& p) {
    return sys::set_system_information(uint32_t(InfoClass::kSystemPerformanceTraceInformation), &p, sizeof p);
}
bool live_equals(const volatile uint32_t* live, const EventTraceSpinlockInformation& p) {
    return live[0] == p.spin_threshold && live[1] == p.acquire_sample_rate &&
           live[2] == p.contention_sample_rate && live[3] == p.hold_threshold;
}
void params() {
    LockstatMapping m{};
    CHECK(sys::call(kSysMapLockstat, uint64_t(&m)) == 0);
    CHECK(m.params_base != 0);
    if (failures) return;
    const auto* live = reinterpret_cast<const volatile uint32_t*>(m.params_base);
    EventTraceSpinlockInformation was{};
    was.event_trace_information_class = uint32_t(EventTraceInformationClass::kEventTraceSpinlockInformation);
    uint32_t len = 0;
    CHECK(sys::query_system_information(uint32_t(InfoClass::kSystemPerformanceTraceInformation), &was, sizeof was,
                                        &len) == 0);
    CHECK(live_equals(live, was));
    EventTraceSpinlockInformation p = was;
    p.spin_threshold += 7;
    p.acquire_sample_rate += 1000;
    p.contention_sample_rate += 3;
    p.hold_threshold += 12345;
    CHECK(set_spinlock_params(p) == 0);
    CHECK(live_equals(live, p));
    CHECK(set_spinlock_params(was) == 0);
    CHECK(live_equals(live, was));
}

}  // namespace

// kSysWordWait/kSysWordWake (kern/word_wait.h): a wait on a word that no longer holds the
// expected value returns 1 at once; hostile words are refused; a wake with no waiter wakes
// none; a sleeping waiter is woken by exactly one wake; and a ping-pong of many rounds between
// two threads, each sleeping until the other changes the word and wakes it, loses no wake (a
// lost one would leave both asleep: the self-test's timeout).
alignas(64) volatile uint32_t ww_word;
alignas(64) volatile uint32_t ww_asleep;  // the waiter is about to sleep (set before its call)
volatile int64_t ww_result = -100;

void ww_waiter(void*) {
    ww_asleep = 1;
    int64_t r;
    do {  // woken with the word unchanged would be spurious: check and wait again
        r = sys::word_wait(const_cast<const uint32_t*>(&ww_word), 0);
    } while (r == 0 && ww_word == 0);
    ww_result = r;
}

constexpr uint32_t kPingPongRounds = 2000;
alignas(64) volatile uint32_t pp_turn;  // even: thread A's turn, odd: B's
volatile uint64_t pp_sleeps;

void pp_player(void* p) {
    const uint32_t me = uint32_t(uint64_t(p));
    for (uint32_t i = me; i < 2 * kPingPongRounds; i += 2) {
        for (;;) {
            const uint32_t t = pp_turn;
            if (t == i) break;
            if (sys::word_wait(const_cast<const uint32_t*>(&pp_turn), t) == 0)
                __atomic_add_fetch(&pp_sleeps, 1, __ATOMIC_RELAXED);
        }
        pp_turn = i + 1;
        sys::word_wake(const_cast<const uint32_t*>(&pp_turn), 1);
        // Progress, so that a run slowed by the host (a ticket-locked guest on an overcommitted
        // host can take minutes) is told from a lost wake by the self-test's console timeout.
        if (me == 0 && (i + 2) % 1000 == 0)
            printf("usertest word-wait: %u of %u hand-overs\n", i + 2, 2 * kPingPongRounds);
    }
}

void word_wait() {
    ww_word = 5;
    CHECK(sys::word_wait(const_cast<const uint32_t*>(&ww_word), 4) == 1);  // not equal: no sleep
    CHECK(sys::word_wake(const_cast<const uint32_t*>(&ww_word), 8) == 0);  // nobody waits
    CHECK(sys::word_wait(reinterpret_cast<const uint32_t*>(kKernelAddr), 0) == -kErrFault);
    CHECK(sys::word_wait(reinterpret_cast<const uint32_t*>(kUnmapped), 0) == -kErrFault);
    CHECK(sys::word_wait(reinterpret_cast<const uint32_t*>(kNonCanonical), 0) == -kErrFault);
    CHECK(sys::word_wait(reinterpret_cast<const uint32_t*>(reinterpret_cast<uint64_t>(&ww_word) + 1), 0) ==
          -kErrFault);
    CHECK(sys::word_wake(reinterpret_cast<const uint32_t*>(kKernelAddr), 1) == -kErrFault);
    CHECK(sys::call(kSysWordWait, uint64_t(&ww_word), uint64_t(1) << 32) == -kErrInval);
    // One sleeper, woken by one wake after the word changed.
    ww_word = 0;
    ww_asleep = 0;
    ww_result = -100;
    int t = thread_start(ww_waiter, nullptr);
    CHECK(t > 0);
    while (!ww_asleep) sys::yield();
    int64_t woken = 0;
    sys::sleep_us(1000);  // most likely asleep in the kernel by now
    ww_word = 1;          // changed before the wake: the wake cannot be lost
    for (int i = 0; i < 2000 && woken == 0 && ww_result == -100; i++) {
        woken = sys::word_wake(const_cast<const uint32_t*>(&ww_word), 1);
        if (woken == 0) sys::sleep_us(1000);
    }
    CHECK(t <= 0 || sys::thread_join(t) == 0);
    // Slept: woken by our one wake. Or it reached the kernel after the change: back at once.
    CHECK(ww_result == 0 ? woken == 1 : (ww_result == 1 && woken == 0));
    // Ping-pong between two threads (one per CPU where there are two).
    pp_turn = 0;
    pp_sleeps = 0;
    int a = thread_start(pp_player, reinterpret_cast<void*>(0));
    int b = thread_start(pp_player, reinterpret_cast<void*>(1));
    CHECK(a > 0 && b > 0);
    if (a > 0) CHECK(sys::thread_join(a) == 0);
    if (b > 0) CHECK(sys::thread_join(b) == 0);
    CHECK(pp_turn == 2 * kPingPongRounds);
    printf("usertest word-wait: ping-pong of %u hand-overs, %lu of them slept in the kernel\n",
           2 * kPingPongRounds, uint64_t(pp_sleeps));
}

int main(int argc, char** argv) {
    if (argc < 2) {
        eprintf("usage: usertest cpus|parallel|threads|badptr|fuzz [N] [seed]|privilege|"
                "args ...|spawn-unpriv|params|word-wait|ring [N]|ring-unpriv|ring-scribble [ms]|all\n");
        return 2;
    }
    const char* m = argv[1];
    bool all = strcmp(m, "all") == 0;
    if (strcmp(m, "privilege") == 0) return sys::privileged() ? 0 : 1;
    if (strcmp(m, "args") == 0) {  // exit code: argc * 10 + total length, to check packing
        int total = 0;
        for (int i = 2; i < argc; i++) total += int(strlen(argv[i]));
        CHECK(argv[argc] == nullptr);
        return failures ? 255 : argc * 10 + total;
    }
    if (all || strcmp(m, "cpus") == 0) cpus();
    if (all || strcmp(m, "parallel") == 0) parallel();
    if (all || strcmp(m, "threads") == 0) threads();
    if (all || strcmp(m, "thread-limit") == 0) thread_limit();
    if (all || strcmp(m, "badptr") == 0) badptr();
    if (all || strcmp(m, "spawn-unpriv") == 0) spawn_unpriv();
    if (all || strcmp(m, "params") == 0) params();
    if (all || strcmp(m, "word-wait") == 0) word_wait();
    if (strcmp(m, "ring") == 0) {  // needs a session (the trace suite's): not in all
        uint64_t n = 3000;
        if (argc > 2) parse_u64(argv[2], &n);
        ring(n);
    }
    if (strcmp(m, "ring-unpriv") == 0) ring_unpriv();
    if (strcmp(m, "ring-scribble") == 0) {  // needs a session too
        uint64_t ms = 500;
        if (argc > 2) parse_u64(argv[2], &ms);
        ring_scribble(ms);
    }
    if (all || strcmp(m, "fuzz") == 0) {
        uint64_t n = 20000, seed = 12345;
        if (argc > 2) parse_u64(argv[2], &n);
        if (argc > 3) parse_u64(argv[3], &seed);
        fuzz(n, seed | 1);
    }
    if (failures) eprintf("usertest %s: %d check(s) failed\n", m, failures);
    else printf("usertest %s: ok\n", m);
    return failures ? 1 : 0;
}
