// arch/x86.h: the x86-64 instructions the kernel uses, one inline function each.
// Layer 1 (arch): nothing here knows about locks, threads or statistics.
#pragma once
#include <stdint.h>

namespace arch {

inline void outb(uint16_t port, uint8_t v) { asm volatile("outb %0, %1" ::"a"(v), "Nd"(port)); }
inline void outw(uint16_t port, uint16_t v) { asm volatile("outw %0, %1" ::"a"(v), "Nd"(port)); }
inline void outl(uint16_t port, uint32_t v) { asm volatile("outl %0, %1" ::"a"(v), "Nd"(port)); }
inline uint8_t inb(uint16_t port) {
    uint8_t v;
    asm volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}
inline uint32_t inl(uint16_t port) {
    uint32_t v;
    asm volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}

inline uint64_t rdmsr(uint32_t msr) {
    uint32_t lo, hi;
    asm volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
    return (uint64_t(hi) << 32) | lo;
}
inline void wrmsr(uint32_t msr, uint64_t v) {
    asm volatile("wrmsr" ::"c"(msr), "a"(uint32_t(v)), "d"(uint32_t(v >> 32)));
}

struct CpuidRegs { uint32_t eax, ebx, ecx, edx; };
inline CpuidRegs cpuid(uint32_t leaf, uint32_t sub = 0) {
    CpuidRegs r;
    asm volatile("cpuid" : "=a"(r.eax), "=b"(r.ebx), "=c"(r.ecx), "=d"(r.edx) : "a"(leaf), "c"(sub));
    return r;
}

// Time stamp counter reads. lfence keeps rdtsc from executing before earlier loads complete;
// rdtscp waits for earlier instructions; cpuid serialises fully (and is a VM exit in a guest).
inline uint64_t rdtsc_raw() {
    uint32_t lo, hi;
    asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t(hi) << 32) | lo;
}
inline uint64_t rdtsc_lfence() {
    uint32_t lo, hi;
    asm volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi)::"memory");
    return (uint64_t(hi) << 32) | lo;
}

// Later instructions (a load, an MMIO read) do not start before earlier ones (a rdtsc) complete.
inline void lfence() { asm volatile("lfence" ::: "memory"); }

inline void pause() { asm volatile("pause" ::: "memory"); }
inline void hlt() { asm volatile("hlt" ::: "memory"); }
inline void cli() { asm volatile("cli" ::: "memory"); }
inline void sti() { asm volatile("sti" ::: "memory"); }
// sti takes effect after the next instruction, so "sti; hlt" cannot lose a wakeup interrupt.
inline void sti_hlt() { asm volatile("sti; hlt" ::: "memory"); }

inline uint64_t read_flags() {
    uint64_t f;
    asm volatile("pushfq; popq %0" : "=r"(f)::"memory");
    return f;
}
constexpr uint64_t kFlagIF = 1u << 9;
inline bool irqs_enabled() { return read_flags() & kFlagIF; }

inline uint64_t read_cr2() {
    uint64_t v;
    asm volatile("mov %%cr2, %0" : "=r"(v));
    return v;
}
inline uint64_t read_cr3() {
    uint64_t v;
    asm volatile("mov %%cr3, %0" : "=r"(v));
    return v;
}
inline void write_cr3(uint64_t v) { asm volatile("mov %0, %%cr3" ::"r"(v) : "memory"); }

// Compiler barrier: orders memory accesses in the compiler only (x86 is TSO for the rest).
inline void barrier() { asm volatile("" ::: "memory"); }

// Increment a per-CPU counter with one instruction: an interrupt on the same CPU cannot split
// it, and no other CPU writes it, so no lock prefix is needed.
inline void percpu_inc(uint64_t* p) { asm volatile("addq $1, %0" : "+m"(*p)); }

// MSRs
constexpr uint32_t kMsrApicBase = 0x1b;
constexpr uint32_t kMsrEfer = 0xc0000080;
constexpr uint32_t kMsrStar = 0xc0000081;
constexpr uint32_t kMsrLstar = 0xc0000082;
constexpr uint32_t kMsrFmask = 0xc0000084;
constexpr uint32_t kMsrFsBase = 0xc0000100;
constexpr uint32_t kMsrGsBase = 0xc0000101;
constexpr uint32_t kMsrKernelGsBase = 0xc0000102;

}  // namespace arch
