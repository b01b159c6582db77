// user/lib/sys.h: system-call wrappers for guest programs (ABI: spinlab/syscall.h).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "spinlab/syscall.h"

namespace sys {

inline int64_t call(uint64_t n, uint64_t a = 0, uint64_t b = 0, uint64_t c = 0, uint64_t d = 0) {
    int64_t r;
    register uint64_t r10 asm("r10") = d;
    asm volatile("int $0x80" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "memory");
    return r;
}

inline int64_t write(int fd, const void* buf, size_t n) { return call(spinlab::kSysWrite, fd, uint64_t(buf), n); }
inline int64_t read(int fd, void* buf, size_t n) { return call(spinlab::kSysRead, fd, uint64_t(buf), n); }
[[noreturn]] inline void exit(int code) {
    call(spinlab::kSysExit, uint64_t(code));
    __builtin_unreachable();
}
inline int64_t spawn(const char* path, const char* const* argv, uint64_t flags = 0) {
    return call(spinlab::kSysSpawn, uint64_t(path), uint64_t(argv), flags);
}
inline int64_t wait(int pid, int32_t* code) { return call(spinlab::kSysWait, uint64_t(pid), uint64_t(code)); }
inline int64_t getpid() { return call(spinlab::kSysGetpid); }
inline int64_t thread_create(void (*entry)(void*), void* arg, void* stack_top) {
    return call(spinlab::kSysThreadCreate, uint64_t(entry), uint64_t(arg), uint64_t(stack_top));
}
inline int64_t thread_join(int tid) { return call(spinlab::kSysThreadJoin, uint64_t(tid)); }
[[noreturn]] inline void thread_exit(int code) {
    call(spinlab::kSysThreadExit, uint64_t(code));
    __builtin_unreachable();
}
inline void yield() { call(spinlab::kSysYield); }
// 0: woken (check the word again), 1: *word != expected, <0: -spinlab::Error.
inline int64_t word_wait(const uint32_t* word, uint32_t expected) {
    return call(spinlab::kSysWordWait, uint64_t(word), expected);
}
inline int64_t word_wake(const uint32_t* word, uint64_t max) { return call(spinlab::kSysWordWake, uint64_t(word), max); }
inline int64_t sleep_us(uint64_t us) { return call(spinlab::kSysSleep, us); }
inline int64_t pin(int cpu) { return call(spinlab::kSysPin, uint64_t(int64_t(cpu))); }
inline uint64_t tsc_hz() { return uint64_t(call(spinlab::kSysTscHz)); }
inline int cpu_count() { return int(call(spinlab::kSysCpuCount)); }
inline int cpu_number() { return int(call(spinlab::kSysCpuNumber)); }
inline bool privileged() { return call(spinlab::kSysPrivileged) == 1; }
inline void* map_anon(size_t n) {
    int64_t r = call(spinlab::kSysMapAnon, n);
    return r < 0 ? nullptr : reinterpret_cast<void*>(r);
}

inline int64_t trace_spinlock(const void* event) { return call(spinlab::kSysTraceSpinlock, uint64_t(event)); }
inline int64_t trace_ring(spinlab::TraceRingCommand c) { return call(spinlab::kSysTraceRing, uint64_t(c)); }

// The system-information calls return an NTSTATUS (spinlab/status.h), as Windows' do.
inline uint32_t query_system_information(uint32_t cls, void* buf, uint32_t len, uint32_t* ret_len) {
    return uint32_t(call(spinlab::kSysQuerySystemInformation, cls, uint64_t(buf), len, uint64_t(ret_len)));
}
inline uint32_t set_system_information(uint32_t cls, const void* buf, uint32_t len) {
    return uint32_t(call(spinlab::kSysSetSystemInformation, cls, uint64_t(buf), len));
}

inline uint64_t rdtsc() {
    uint32_t lo, hi;
    asm volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi)::"memory");
    return (uint64_t(hi) << 32) | lo;
}

}  // namespace sys
