// kern/bootopts.h: the kernel's boot options, parsed once from the multiboot command line.
#pragma once
#include <stdint.h>

#include "../lockstat/params.h"

struct BootOptions {
    const char* selftest;   // "" = none; "all" or a comma-separated list of suites
    uint32_t hz;            // timer interrupts per second per CPU
    uint32_t maxcpus;       // start at most this many CPUs
    const char* init;       // "" = none; else the first program and its arguments
    // Spinlocks (kern/lockstat.h holds the live copy the lock paths read):
    uint32_t lock;          // lock=: a spinlab::LockAlgorithm, named as its ABI table names it
    uint32_t clock;         // clock=: a spinlab::ClockSource, likewise
    bool pause;             // pause=on|off: pause in spin loops
    uint64_t lockup;        // lockup=<cycles>: lockup detector bound, 0 = off
    uint64_t long_wait;     // long-wait=<cycles>: waits this long are long-wait trace events
    uint32_t pvspin;        // pvspin=<n>: spins before the PV lock yields
    const char* bench;      // bench=spinlock: run the in-guest benchmark instead of a shell
    bool pvyield;           // pvyield=on|off: the pv lock may make the sched-yield hypercall
    bool stackprobe;        // stackprobe=on: kern/stackprobe.h's thread runs
    uint32_t timing;        // timing=contended|all: spinlab::lockstat::Timing (same order)
    uint32_t pvqspin_spin;  // pvqspin-spin=<n>: spins before a pvqspin waiter halts
    bool pvqspin_nmi;       // pvqspin-kick=auto|nmi: nmi kicks by NMI even with KVM PV unhalt
    // spin-threshold=, acquire-sample-rate=, contention-sample-rate=, hold-threshold=: the
    // starting values of the live parameters (g_spinlock_params), each at least its minimum.
    spinlab::lockstat::SpinlockParams spinlock;
};

extern BootOptions g_boot;

// Parses the command line; on any error prints the message and the list of known options and
// leaves QEMU with a failing status: never boots half-configured.
void bootopts_init(const char* cmdline);
