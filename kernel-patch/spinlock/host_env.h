// spinlock/host_env.h: the environment (algorithms.h's Env) for running the lock algorithms on
// the host: in GoogleTest, where each std::thread plays a CPU, and in benchmarks. Host only (uses
// <thread>); the kernel has its own Env. lockstat/instrumented_host_env.h adds what the
// instrumentation layer calls (clock, counters, parameters, steal time, trace hooks).
#pragma once

#include <spinlab/sysinfo.h>
#include <stdint.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "algorithms.h"

namespace spinlab::spinlock {

// One per thread ("CPU").
struct HostEnv {
    LockAlgorithm algo = LockAlgorithm::kTestAndSet;
    uint32_t cpu_id = 0;
    bool pause = true;
    // More threads than host cores: a waiter that spins on while the holder's thread is
    // descheduled burns its whole time slice (host-side lock-holder preemption). Giving the
    // host CPU away every yield_every spins keeps the tests fast; 0 never yields. A yield does
    // not help when the holder's thread waits on another host CPU behind a CPU-heavy neighbour
    // (the yield returns at once to a waiter alone on its CPU), so every 64th of them sleeps
    // 50 us instead: the CPU goes idle and the scheduler's new-idle balance pulls the holder over.
    // Beside one unpinned busy loop, SpinlockEvents.ContendedEventsEqualTheCountersExactly took
    // 0.4-46 s with yields only, on 2 cores.
    uint32_t yield_every = 0;
    uint32_t pv_bound = 64;
    uint32_t pticket_unit = kPticketTimeoutUnit;
    // Scripting for tests: which vCPUs count as preempted (preempted_fn(script_arg, cpu); none
    // when null), and what the rest of the machine does while this CPU waits (on_spin, called
    // at every relax() and yield_to(): release a lock, bring a vCPU back...).
    bool (*preempted_fn)(void* arg, uint32_t cpu) = nullptr;
    void (*on_spin)(void* arg) = nullptr;
    void* script_arg = nullptr;
    // Observations for tests.
    uint64_t yields = 0;       // yield_to() calls
    uint64_t spin_checks = 0;  // spin_check() calls
    uint32_t first_yield_target = kNoCpu;
    uint32_t last_yield_target = kNoCpu;
    uint32_t relax_count = 0;
    uint64_t off_checks = 0;  // vcpu_is_off() calls

    LockAlgorithm algorithm() const { return algo; }
    uint32_t cpu() const { return cpu_id; }
    void relax() {
        if (pause) cpu_pause();
        if (yield_every && ++relax_count % yield_every == 0) {
            if (relax_count % (64 * yield_every) == 0)
                std::this_thread::sleep_for(std::chrono::microseconds(50));
            else
                std::this_thread::yield();
        }
        if (on_spin) on_spin(script_arg);
    }
    uint32_t pv_spin_bound() const { return pv_bound; }
    void yield_to(uint32_t holder) {
        if (yields++ == 0) first_yield_target = holder;
        last_yield_target = holder;
        std::this_thread::yield();
        if (on_spin) on_spin(script_arg);
    }
    void spin_check(const Lock&, uint64_t) { spin_checks++; }
    uint32_t pticket_timeout_unit() const { return pticket_unit; }
    bool vcpu_is_off(uint32_t cpu) {
        off_checks++;
        return preempted_fn != nullptr && cpu != kNoCpu && preempted_fn(script_arg, cpu);
    }

    // lock=pvqspin (pv_qspinlock.h). With `kicks` set (one counter per CPU, shared by every
    // thread), pv_wait models a vCPU's hlt strictly: it returns at once if *p != v, else it
    // "halts" until kicks[cpu] moves past the value it read BEFORE that check (so a kick that
    // came before the check is lost, as an NMI's would be; the lock must not need it). Without
    // `kicks` it yields and says it did not halt (no halt on the host).
    //
    // A lost wake-up is a kick owed and not sent: the store that ends the wait (*p != v) came,
    // and no kick followed within halt_timeout. A halt whose *p has not changed yet waits on, as
    // hlt would, however long the host keeps its waker off the CPU (on a loaded 2-core machine
    // a thread can wait seconds for its turn; that is not the lock's fault), up to halt_limit,
    // and is then counted as lost too (a waker that never comes). Either way it then returns.
    std::atomic<uint64_t>* kicks = nullptr;
    uint32_t pvq_bound = 64;
    std::chrono::milliseconds halt_timeout{10000};
    std::chrono::milliseconds halt_limit{120000};
    uint64_t lost_wakeups = 0;  // halts whose kick did not come (above)
    uint64_t pv_events[4] = {};  // pv_count(), by PvEvent

    // One wait's watch for a lost wake-up (pv_wait; the tests' ring-3 word wait too): overdue()
    // is told each time round whether the condition that ends the wait has changed, and says
    // when halt_timeout has passed since it first did, or halt_limit since the wait began.
    struct WakeWatch {
        const HostEnv& env;
        std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now(), changed{};
        bool seen_change = false;
        bool overdue(bool changed_now) {
            const auto now = std::chrono::steady_clock::now();
            if (changed_now && !seen_change) {
                seen_change = true;
                changed = now;
            }
            return (seen_change && now - changed > env.halt_timeout) || now - start > env.halt_limit;
        }
    };

    bool pv_wait(const uint8_t* p, uint8_t v) {
        if (kicks == nullptr) {
            std::this_thread::yield();
            if (on_spin) on_spin(script_arg);
            return false;
        }
        const uint64_t k0 = kicks[cpu_id].load(std::memory_order_seq_cst);
        if (__atomic_load_n(p, __ATOMIC_SEQ_CST) != v) return false;
        WakeWatch watch{*this};
        while (kicks[cpu_id].load(std::memory_order_seq_cst) == k0) {
            std::this_thread::yield();
            if (watch.overdue(__atomic_load_n(p, __ATOMIC_SEQ_CST) != v)) {
                lost_wakeups++;
                break;
            }
        }
        return true;
    }
    void pv_kick(uint32_t cpu) {
        if (kicks != nullptr) kicks[cpu].fetch_add(1, std::memory_order_seq_cst);
    }
    void pv_count(PvEvent e) { pv_events[static_cast<int>(e)]++; }
    uint32_t pvqspin_spin_bound() const { return pvq_bound; }
    uint64_t pv(PvEvent e) const { return pv_events[static_cast<int>(e)]; }
};

}  // namespace spinlab::spinlock
