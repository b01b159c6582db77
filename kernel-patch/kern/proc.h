// kern/proc.h: user processes: an address space, one or more threads, a parent that waits.
#pragma once
#include <stdint.h>

#include "sched.h"
#include "spinlock.h"
#include "address_space.h"

constexpr int kMaxProcs = 64;
constexpr int kMaxProcThreads = 64;

enum class ProcState : uint8_t { kUnused, kAlive, kZombie };

struct Process {
    // proc_lock must be held when using these:
    ProcState state;
    int pid;
    Process* parent;           // nullptr: orphan, reaped by the reaper thread
    int exit_code;
    bool killed;               // every thread leaves at its next kernel entry or exit
    bool lockstat_mapped;      // kSysMapLockstat done (the counters are in its address space)
    int live_threads;
    Thread* threads[kMaxProcThreads];   // for join by tid; slot freed at join or reap

    // Fixed at spawn:
    char name[32];
    bool privileged;           // may set tracing parameters (and spawn privileged children)
    AddressSpace* as;

    // The user-mode logger's rings of its threads (kern/locktrace.cc), null until a thread
    // asks for one (kSysTraceRing); freed at reap, after the address space they are mapped in.
    void* trace_rings = nullptr;
};

void proc_init();                          // boot CPU: process table, reaper thread
// Calls fn for every live process (not yet a zombie), under proc_lock: fn must take no lock of a
// lower rank (lockclass.h) and must not sleep.
void proc_for_each(void (*fn)(const Process* p));
void proc_set_initrd(const uint8_t* data, uint64_t size);
bool proc_initrd_present();

// Starts path from the initrd with argv (argc entries). Returns the pid or -spinlab::Error.
// parent may be nullptr (started by the kernel).
int64_t proc_spawn(const char* path, const char* const* argv, int argc, bool privileged,
                   Process* parent);
// Waits for the child pid of parent (parent nullptr: the kernel's own children); returns pid
// and its exit code, or -spinlab::Error.
int64_t proc_wait(Process* parent, int pid, int* exit_code);
Process* current_proc();
// The slot of thread t in p->threads (the ring of the user-mode logger follows it), or -1.
int proc_thread_slot(Process* p, const Thread* t);
int64_t proc_thread_create(Process* p, uint64_t entry, uint64_t arg, uint64_t stack_top);
int64_t proc_thread_join(Process* p, int tid);
[[noreturn]] void proc_thread_exit(int code);   // the calling user thread
[[noreturn]] void proc_exit(int code);          // the whole process
void proc_check_killed();                        // called on the way back to ring 3

extern Spinlock g_proc_lock;
