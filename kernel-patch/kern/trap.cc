// kern/trap.cc: IDT setup and trap dispatch. Exceptions in the kernel are fatal and reported
// with every register and the CPU they happened on; device interrupts are acknowledged here.
#include "locktrace.h"
#include "trap.h"

#include "../arch/x86.h"
#include "channel_device.h"
#include "console.h"
#include "lapic.h"
#include "prcb.h"
#include "proc.h"
#include "sched.h"
#include "spinlock.h"
#include "sysinfo_glue.h"

extern "C" const uint64_t trap_vectors[256];
void (*g_user_fault_handler)(TrapFrame* tf);
void (*g_kernel_debug_handler)(TrapFrame* tf);

namespace {

struct __attribute__((packed)) IdtEntry {
    uint16_t off_lo, selector;
    uint8_t ist, type_attr;
    uint16_t off_mid;
    uint32_t off_hi, zero;
};
IdtEntry idt[256];

const char* const kExceptionNames[32] = {
    "divide error", "debug", "NMI", "breakpoint", "overflow", "bound range", "invalid opcode",
    "device not available", "double fault", "coprocessor overrun", "invalid TSS",
    "segment not present", "stack fault", "general protection", "page fault", "reserved",
    "x87 floating point", "alignment check", "machine check", "SIMD floating point",
    "virtualization", "control protection", "reserved", "reserved", "reserved", "reserved",
    "reserved", "reserved", "hypervisor injection", "VMM communication", "security", "reserved",
};

[[noreturn]] void kernel_fault(TrapFrame* tf) {
    Prcb* c = this_cpu();
    panic("%s (vector %lu, error 0x%lx) in the kernel on cpu %u, thread %s\n"
          "  rip %016lx  cs %lx  rflags %016lx  rsp %016lx  cr2 %016lx\n"
          "  rax %016lx  rbx %016lx  rcx %016lx  rdx %016lx\n"
          "  rsi %016lx  rdi %016lx  rbp %016lx  r8  %016lx\n"
          "  r9  %016lx  r10 %016lx  r11 %016lx  r12 %016lx\n"
          "  r13 %016lx  r14 %016lx  r15 %016lx",
          trap_name(tf->vector), tf->vector, tf->error, c->number,
          c->current ? thread_name(c->current) : "-", tf->rip, tf->cs, tf->rflags, tf->rsp,
          arch::read_cr2(), tf->rax, tf->rbx, tf->rcx, tf->rdx, tf->rsi, tf->rdi, tf->rbp, tf->r8,
          tf->r9, tf->r10, tf->r11, tf->r12, tf->r13, tf->r14, tf->r15);
}

constexpr uint64_t kVectorInvalidOpcode = 6;

bool is_int80(const TrapFrame* tf) {
    Process* p = current_proc();
    uint8_t insn[2];
    return p && copy_from_user(p->as, insn, tf->rip, 2) == 0 && insn[0] == 0xcd && insn[1] == 0x80;
}

}  // namespace

const char* trap_name(uint64_t v) {
    if (v < 32) return kExceptionNames[v];
    if (v == kVectorTimer) return "timer";
    if (v == kVectorCom1) return "com1";
    if (v == kVectorCom2) return "com2";
    if (v == kVectorSyscall) return "system call";
    return "interrupt";
}

bool trap_from_user(const TrapFrame* tf) { return (tf->cs & 3) == 3; }

void trap_init() {
    for (int i = 0; i < 256; i++) {
        uint64_t a = trap_vectors[i];
        idt[i] = {uint16_t(a), 0x08, 0, 0x8e, uint16_t(a >> 16), uint32_t(a >> 32), 0};
    }
    idt[8].ist = 1;  // double fault on its own stack: the kernel stack may be what broke
    idt[kVectorSyscall].type_attr = 0xee;  // present, DPL 3: user code may `int $0x80`
}

void trap_init_cpu() {
    struct __attribute__((packed)) {
        uint16_t limit;
        uint64_t base;
    } p = {sizeof idt - 1, uint64_t(idt)};
    asm volatile("lidt %0" ::"m"(p));
}

void syscall_dispatch(TrapFrame* tf);  // kern/syscall.cc

extern "C" void trap_dispatch(TrapFrame* tf) {
    // An NMI is lock=pvqspin's kick without KVM's PV unhalt (kern/spinlock.cc). It may arrive
    // anywhere, even between an entry's or exit's swapgs and its iretq, so %gs may be the
    // user's: nothing here reads the PRCB. Its only work: an NMI inside the halt window resumes
    // after the hlt. Any other NMI is ignored.
    if (tf->vector == kVectorNmi) {
        spin_pv_nmi(&tf->rip);
        return;
    }
    Prcb* c = this_cpu();
    switch (tf->vector) {
    case kVectorSyscall:
        if (!trap_from_user(tf)) kernel_fault(tf);
        syscall_dispatch(tf);  // runs with interrupts enabled
        break;
    case kVectorTimer:
        c->ticks++;
        lapic_eoi();
        locktrace_tick(tf);  // arm/disarm, FlushTimer, profile
        sched_tick();
        break;
    case kVectorCom1:
        console_rx_interrupt();
        lapic_eoi();
        break;
    case kVectorCom2:
        channel_rx_interrupt();
        lapic_eoi();
        break;
    case kVectorResched:
        lapic_eoi();
        break;
    case kVectorLockstatReset:
        sysinfo_reset_ipi();
        lapic_eoi();
        break;
    case kVectorHalt:
        for (;;) arch::hlt();
    case kVectorSpurious:
        break;  // no EOI for a spurious interrupt
    case kVectorInvalidOpcode:
        // The nested paravirtual KVM (kvm_pvm) of the build machines reflects `int $0x80`
        // from ring 3 as #UD at the instruction. Recognise it and carry on as a system call.
        if (trap_from_user(tf) && is_int80(tf)) {
            tf->rip += 2;
            syscall_dispatch(tf);
            break;
        }
        [[fallthrough]];  // a real invalid opcode: an exception like any other
    default:
        if (tf->vector < 32) {
            if (trap_from_user(tf) && g_user_fault_handler) {
                g_user_fault_handler(tf);
                return;
            }
            if (tf->vector == kVectorDebug && g_kernel_debug_handler) {
                g_kernel_debug_handler(tf);
                return;
            }
            kernel_fault(tf);
        }
        kprintf("trap: unexpected vector %lu on cpu %u\n", tf->vector, c->number);
        lapic_eoi();
    }
    // Preempt on the way out of a timer interrupt when the slice is over and no spinlock is
    // held; sched_tick only sets the flag. A system call runs with interrupts on and may have
    // moved this thread to another CPU, so the PRCB read on entry may be another CPU's now:
    // read it again, with interrupts off so it stays ours.
    // trap_return swaps GS back to the user's before iretq: nothing may interrupt it either.
    arch::cli();
    c = this_cpu();
    if (c->resched_pending && c->preempt_disable == 0 && c->current != c->idle) {
        c->resched_pending = false;
        yield();
    }
    if (trap_from_user(tf)) proc_check_killed();  // exit() or a fault in another thread
}
