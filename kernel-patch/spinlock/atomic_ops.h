// spinlock/atomic_ops.h: the few atomic operations the lock algorithms use, each with what it
// orders and what it compiles to on x86-64. Freestanding: compiler builtins and inline asm only.
#pragma once

#include <stdint.h>

namespace spinlab::spinlock {

// Plain load that the compiler must re-read on every iteration of a spin loop (mov).
template <class T>
inline T load_relaxed(const T* p) {
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}

// Load that keeps later loads and stores below it: what a waiter uses when it sees the lock
// handed over. On x86 a mov (loads are not reordered with later accesses).
template <class T>
inline T load_acquire(const T* p) {
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

template <class T>
inline void store_relaxed(T* p, T v) {
    __atomic_store_n(p, v, __ATOMIC_RELAXED);
}

// Store that keeps the critical section above it: the release of every lock. On x86 a plain
// mov (stores are not reordered with earlier loads or stores); the builtin stops the compiler.
template <class T>
inline void store_release(T* p, T v) {
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

// The test-and-set lock's `lock bts`: atomically set bit 0 of *w and return its previous value. The
// lock prefix is a full barrier, so nothing in the critical section moves above a successful one.
inline bool test_and_set_bit0(uint32_t* w) {
    bool was_set;
    asm volatile("lock btsl $0, %0" : "+m"(*w), "=@ccc"(was_set)::"memory");
    return was_set;
}

// Spin-wait hint. Lets the sibling hyperthread run and, inside a VM, drives the host's
// pause-loop exiting. The memory clobber keeps the compiler from hoisting loads out of loops.
inline void cpu_pause() {
    asm volatile("pause" ::: "memory");
}

}  // namespace spinlab::spinlock
