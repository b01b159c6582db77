// spinlock/lock.h: the lock object shared by the algorithms (see algorithms.h).
#pragma once

#include <spinlab/perfdata.h>
#include <stdint.h>

namespace spinlab::spinlock {

// One waiter's place in a queued (MCS) lock. The kernel keeps one per CPU per nesting level;
// it must stay put from acquisition to release, and is used by one acquisition at a time.
struct McsNode {
    McsNode* next;     // successor in the queue; written by the successor, read by us
    uint32_t waiting;  // 1 while we queue behind a holder; the predecessor's release clears it
    uint32_t cpu;      // pvmcs, pvqspin: the CPU this node queues for, read by the successor
                       // (which spins only while that vCPU runs) and by pvqspin's kicker;
                       // unused by mcs
    uint8_t pv_state;  // pvqspin: running, halted or hashed (pv_qspinlock.h's kPv*)
};

// Ticket lock word: next ticket to hand out (high half), ticket being served (low half).
struct TicketHalves {
    uint16_t serving;
    uint16_t next;
};

// Preemptable ticket lock word (preemptable_ticket_lock.h): the ticket half and the "now
// serving" half in one 64-bit word, so that one compare-and-swap can take a free lock.
struct PticketHalves {
    uint32_t state;  // bit 0: locked; bits 1..31: releases so far ("serving"), mod 2^31
    uint32_t next;   // next ticket to hand out, mod 2^32 (compared mod 2^31)
};

// locktrace's facts of one hold, gathered at acquisition for the event written at release
// (spinlab/trace.h's TraceSpinlockEvent). Written and read by the holder only.
struct HoldTrace {
    uint64_t acquire_tsc;
    uint64_t wait_cycles;       // contended, measured
    uint64_t spins;             // contended: 1 (the failed try) + the wait loop's spins
    uint64_t holder_steal_ns;   // steal time of the holder's vCPU during the wait
    uint64_t waiter_steal_ns;   // ours
    uint32_t holder_cpu_start;  // holder when the wait began
    uint32_t holder_cpu_end;    // the CPU whose release handed the lock over
    uint8_t armed;              // 1: a trace session wanted this hold; release decides
    uint8_t contended;
    uint8_t wait_overflow;
    uint8_t lhp_class;
    // Holds that began on this lock during the wait (Lock::hold_seq), saturating at 255; valid
    // when handovers_known (contended, instrumented). 0: the hold seen at the start is the one
    // that released the lock to us, so there was no hand-over in between.
    uint8_t handovers;
    uint8_t handovers_known;
    // 1: no hold of a lock of this class began on the waiter's CPU during the wait (the CPU's
    // own count of the class's acquisitions did not move), so with a holder at the start that
    // was not this CPU, this CPU held the lock at no moment of the wait. Valid with
    // handovers_known.
    uint8_t waiter_cpu_took_none;
};

struct Lock {
    // The lock word. Test-and-set, PV and student: bit 0 of raw set = held. Ticket: the two
    // halves of raw. Preemptable ticket: all 64 bits. Queued: unused. Paravirtual queued
    // (pvqspin): the low byte, free / locked / locked and slow (pv_qspinlock.h). Only one algorithm runs
    // per boot, so they can share it; raw64 comes first so that `{0}` clears all of it.
    union {
        uint64_t raw64;
        uint32_t raw;  // the low half
        TicketHalves ticket;
        PticketHalves pticket;
        uint8_t pvq_locked;
    } word;
    // CPU holding the lock, kNoCpu when free. Written by the holder (relaxed) right after it
    // takes the lock and right before it lets go; read racily by waiters (PV yield target,
    // LHP attribution, lockup report), who accept a stale value.
    uint32_t holder_cpu;
    McsNode* mcs_tail;        // queued lock: last waiter, or null when free
    McsNode* mcs_owner;       // queued lock: the holder's node (the holder's, only it touches it)
    const void* holder_site;  // acquisition call site (written by the kernel wrapper)
    const char* name;         // given at init; never changes
    uint32_t class_id;        // lock class for lockstat, < kMaxLockClasses; never changes
    // lockstat's state of the current hold, written and read by the holder only:
    uint32_t hold_timed;  // 1: this hold's start was stamped; release records it
    uint64_t hold_start;
    // The CPU that last released the lock (instrumented builds), so the next holder knows who
    // handed it over. Written by the releasing holder just before it lets go.
    uint32_t released_by;
    // Holds begun on this lock so far (wraps): every win bumps it before it stores holder_cpu
    // (note_holder, algorithms.h), so a waiter that reads it when its wait begins and again when
    // it wins knows how many holds began in between, whatever the timestamps say (a winner
    // stopped between its win and its stamp stamps late). Written by the holder only, on the
    // line it writes holder_cpu to (one store, kept at every instrumentation level, as
    // holder_cpu is); read racily by waiters.
    uint32_t hold_seq;
    HoldTrace trace;
    // Preemptable ticket lock: the holder's ticket, so that its release moves "serving" past
    // it (preemptable_ticket_lock.h). Written and read by the holder only.
    uint32_t pticket_owner;
};

constexpr uint64_t kSpinCheckInterval = 1u << 16;

inline void lock_init(Lock& l, const char* name, uint32_t class_id) {
    l.word.raw64 = 0;
    l.holder_cpu = kNoCpu;
    l.mcs_tail = nullptr;
    l.mcs_owner = nullptr;
    l.holder_site = nullptr;
    l.name = name;
    l.class_id = class_id < kMaxLockClasses ? class_id : 0;
    l.hold_timed = 0;
    l.hold_start = 0;
    l.released_by = kNoCpu;
    l.hold_seq = 0;
    l.trace = HoldTrace{};
    l.pticket_owner = 0;
}

}  // namespace spinlab::spinlock
