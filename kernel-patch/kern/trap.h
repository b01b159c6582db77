// kern/trap.h: the interrupt descriptor table and the frame every trap builds (vectors.S).
#pragma once
#include <stdint.h>

struct TrapFrame {
    uint64_t r15, r14, r13, r12, r11, r10, r9, r8, rbp, rdi, rsi, rdx, rcx, rbx, rax;
    uint64_t vector, error;
    uint64_t rip, cs, rflags, rsp, ss;  // pushed by the CPU
};

// System calls enter through `int $0x80` (a trap gate ring 3 may use), not `syscall`: the
// nested paravirtual KVM of the build machines does not switch to ring 0 on `syscall`, while
// interrupts and exceptions from ring 3 reach the kernel under every accelerator.
constexpr uint8_t kVectorSyscall = 0x80;

void trap_init();          // boot CPU: fill the IDT
void trap_init_cpu();      // every CPU: load the IDT
bool trap_from_user(const TrapFrame* tf);
const char* trap_name(uint64_t vector);

// Called for an exception in ring 3 (set by the process layer); returns only if it handled it.
extern void (*g_user_fault_handler)(TrapFrame* tf);

// For self-tests that single-step kernel code (RFLAGS.TF): a debug exception (#DB) in ring 0
// goes here instead of being fatal while it is set. Runs with interrupts off, like any trap.
extern void (*g_kernel_debug_handler)(TrapFrame* tf);
constexpr uint64_t kVectorDebug = 1;
constexpr uint64_t kVectorNmi = 2;  // lock=pvqspin's kick (kern/spinlock.cc)
