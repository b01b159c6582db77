// kern/prcb.h: the per-CPU processor control block (PRCB), reached through the GS base.
// One struct, every field documented with who writes it and when (as Zircon's percpu struct
// is).
#pragma once
#include <stdint.h>

#include "../arch/x86.h"

constexpr uint32_t kMaxCpus = 64;
constexpr uint32_t kNoCpu = 0xffffffff;

struct Thread;
struct Context;

// The 64-bit task state segment: the CPU loads rsp0 on an interrupt from ring 3.
struct __attribute__((packed)) Tss {
    uint32_t reserved0;
    uint64_t rsp0;
    uint64_t rsp1, rsp2;
    uint64_t reserved1;
    uint64_t ist[7];
    uint64_t reserved2;
    uint16_t reserved3;
    uint16_t iomap_base;
};

struct Prcb {
    Prcb* self;              // %gs:0, so this_cpu() is one load. Set once in prcb_init_cpu.
    uint32_t number;         // CPU number, 0 = boot CPU (set before the CPU starts)
    uint32_t apic_id;        // local APIC id (from the MADT)
    bool online;             // set by the CPU itself when its init is done

    // Written only by the owning CPU, with interrupts disabled:
    Thread* current;         // the thread running here, or the idle thread
    Thread* idle;            // this CPU's idle thread (runs the scheduler loop)
    Context* sched_ctx;      // where sched() switches to: the idle thread's context
    int irq_disable_depth;   // nesting of irq_save() (spinlocks with interrupts off)
    int preempt_disable;     // > 0: the timer must not switch threads (a spinlock is held)
    bool resched_pending;    // the timer wanted to switch while preemption was disabled
    uint64_t ticks;          // timer interrupts taken on this CPU
    uint64_t ctx_switches;   // threads switched to on this CPU
    uint64_t idle_halts;     // times the idle loop halted
    uint64_t slice_start;    // TSC when the current thread was switched in: its slice starts here

    Tss tss;                 // rsp0: the running thread's kernel stack, for traps from ring 3

    // Room for the instrumentation layers (lockstat, locktrace): owned by them.
    void* lockstat;
    void* locktrace;
};

extern Prcb g_prcbs[kMaxCpus];
extern uint32_t g_ncpus;         // CPUs found in the MADT (and started, after smp_init)

inline Prcb* this_cpu() {
    Prcb* p;
    asm volatile("mov %%gs:0, %0" : "=r"(p));
    return p;
}

// Fields of the CPU the caller runs on, each read by one %gs-relative load. A thread that may
// be preempted (count 0, interrupts on) may be moved to another CPU between two instructions:
// this_cpu()->current is two loads (the PRCB pointer, then the field), and a move between them
// returns the old CPU's current thread, which is no longer this one. One load is before the
// move or after it, and either way the CPU's current thread is the caller.
inline Thread* this_cpu_current() {
    Thread* t;
    asm volatile("movq %%gs:%c1, %0" : "=r"(t) : "i"(__builtin_offsetof(Prcb, current)));
    return t;
}
inline uint32_t cpu_number() {
    uint32_t n;
    asm volatile("movl %%gs:%c1, %0" : "=r"(n) : "i"(__builtin_offsetof(Prcb, number)));
    return n;
}

// The preemption count of the CPU the caller is running on, changed by one %gs-relative
// instruction. this_cpu()->preempt_disable++ would be two (load the PRCB pointer, then add to
// it): with the count at 0 the timer may preempt the thread between them and another CPU may
// run it, so the add lands on the old CPU's count (which then reads 1 with nothing held, and
// sched() there panics) while the new CPU's stays 0 with a lock held (preemptible, and -1
// after the unlock). One instruction is either before the interrupt or after it.
inline void preempt_count_inc() {
    asm volatile("incl %%gs:%c0" ::"i"(__builtin_offsetof(Prcb, preempt_disable)) : "memory");
}
// Returns whether the count reached 0.
inline bool preempt_count_dec() {
    bool zero;
    asm volatile("decl %%gs:%c1"
                 : "=@ccz"(zero)
                 : "i"(__builtin_offsetof(Prcb, preempt_disable))
                 : "memory");
    return zero;
}
// This CPU's resched_pending, read and cleared. Each access is one %gs-relative instruction;
// a migration between them clears the new CPU's flag, which is set for its current thread
// (this one), and the caller yields anyway.
inline bool resched_pending_take() {
    constexpr uint64_t kOff = __builtin_offsetof(Prcb, resched_pending);
    bool pending;
    asm volatile("cmpb $0, %%gs:%c1" : "=@ccnz"(pending) : "i"(kOff) : "memory");
    if (pending) asm volatile("movb $0, %%gs:%c0" ::"i"(kOff) : "memory");
    return pending;
}

void prcb_init_cpu(uint32_t number);  // point GS at g_prcbs[number]

// Interrupt-disable nesting: the first irq_save() remembers nothing (the caller keeps the
// flags), irq_restore() puts them back. depth is for assertions ("interrupts must be off").
inline uint64_t irq_save() {
    uint64_t f = arch::read_flags();
    arch::cli();
    this_cpu()->irq_disable_depth++;
    return f;
}
inline void irq_restore(uint64_t flags) {
    this_cpu()->irq_disable_depth--;
    if (flags & arch::kFlagIF) arch::sti();
}
