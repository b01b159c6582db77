// kern/word_wait.h: a small futex-like wait queue for ring 3 (kSysWordWait, kSysWordWake).
// A thread waits while a 32-bit word of its process's memory holds an expected value; another
// thread of the process changes the word and wakes its waiters. The check and the sleep are one
// step under the queue's lock (class word_wait), which the waker also takes, so a wake made
// after the word changed cannot be lost. A thread asleep here is off its CPU; a vCPU with no
// other runnable thread runs its idle thread, which halts (sched.cc: sti; hlt).
//
// Used by lockbench's ring-3 pvqspin (user/bin/lockbench.cc): its waiter sleeps here after its
// spin bound, and the releaser wakes it.
#pragma once
#include <stdint.h>

struct Process;

// 0 once woken (or spuriously: the caller checks its word again), 1 when *word != expected at
// the call, -spinlab::Error for a word outside the caller's memory or not 4-byte aligned,
// -kErrNoMem when every slot of the queue is taken.
int64_t word_wait(Process* p, uint64_t word, uint32_t expected);
// Wakes up to max threads of p waiting on word; returns how many.
int64_t word_wake(Process* p, uint64_t word, uint64_t max);
