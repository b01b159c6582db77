// lockstat/clock.h: the three time sources (clock=), all reading the TSC, differing in what
// they wait for before reading it. Policies with a static now(), and one runtime switch for
// a kernel that picks at boot. Timestamps are taken only on the contended path and for
// sampled holds, so the switch costs nothing on the uncontended fast path; booted with
// timing=all (timing.h), every acquisition reads the clock twice.
#pragma once

#include <spinlab/sysinfo.h>
#include <stdint.h>

namespace spinlab::lockstat {

// lfence; rdtsc: lfence waits until every earlier instruction has completed locally, so the
// stamp is not taken before the lock word was read. No VM exit. The default.
struct LfenceRdtsc {
    static inline uint64_t now() {
        uint32_t lo, hi;
        asm volatile("lfence\n\trdtsc" : "=a"(lo), "=d"(hi)::"memory");
        return (static_cast<uint64_t>(hi) << 32) | lo;
    }
};

// rdtscp: waits for earlier instructions itself (later ones may start early); clobbers ecx
// with TSC_AUX.
struct Rdtscp {
    static inline uint64_t now() {
        uint32_t lo, hi, aux;
        asm volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux)::"memory");
        (void)aux;
        return (static_cast<uint64_t>(hi) << 32) | lo;
    }
};

// cpuid; rdtsc: the original WRK experiment's clock. cpuid fully serialises, but inside a VM it
// always exits to the hypervisor (about 1,300 cycles on KVM): kept selectable to show that cost.
struct CpuidRdtsc {
    static inline uint64_t now() {
        uint32_t a = 0, b, c = 0, d, lo, hi;
        asm volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d)::"memory");
        asm volatile("rdtsc" : "=a"(lo), "=d"(hi)::"memory");
        return (static_cast<uint64_t>(hi) << 32) | lo;
    }
};

inline uint64_t read_clock(ClockSource source) {
    switch (source) {
        case ClockSource::kRdtscp:
            return Rdtscp::now();
        case ClockSource::kCpuidRdtsc:
            return CpuidRdtsc::now();
        case ClockSource::kLfenceRdtsc:
        default:
            return LfenceRdtsc::now();
    }
}

}  // namespace spinlab::lockstat
