// kern/lockclass.h: the lock classes of lockstat. Every spinlock belongs to one class;
// lockstat keeps its counters per CPU per class (abi/spinlab/perfdata.h), and the class table
// (id, name, locks set up) is what sysinfo's kSpinlabLockClassTable answers.
//
// Layout of the kMaxLockClasses (32) ids, fixed so that guest programs and analysis can rely
// on it (they should still look names up in the class table):
//
//   0                  "other": a lock whose name is not in kKernelClassNames below
//   1 .. 15            one class per named kernel lock (sched, pmm, heap, console, ...);
//                      unused ids are "spareN" and may be given a name later
//   16 .. 31           "user0" .. "user15": reserved for guest workloads' locks (lockbench,
//                      kmix). The system call that lets ring 3 take instrumented locks maps
//                      its workload class k to id kFirstUserLockClass + k; the kernel itself
//                      never uses these ids.
//
// A statically initialised lock (SPINLOCK_INIT("name")) gets its class from its name at
// compile time (lock_class_for_name is constexpr); spin_init does the same at run time;
// spin_init_class gives an explicit class (user classes). To give a new kernel lock its own
// class, add its name to kKernelClassNames in place of a spare: the name must be exactly the
// one passed to SPINLOCK_INIT / spin_init.
#pragma once
#include <spinlab/perfdata.h>
#include <spinlab/sysinfo.h>
#include <stdint.h>

enum LockClassId : uint32_t {
    kLockClassOther = 0,
    kLockClassSched = 1,
    kLockClassPmm = 2,
    kLockClassHeap = 3,
    kLockClassConsole = 4,
    kLockClassProcTable = 5,
    kLockClassAddressSpace = 6,
    kLockClassPipe = 7,
    kLockClassChannel = 8,     // the host control channel server
    kLockClassShm = 9,         // the ivshmem shared region
    kLockClassSysinfo = 10,    // serialises set_system_information
    kLockClassSelftest = 11,   // the self-test runner's own lock
    kLockClassLockstatTest = 12,  // locks of the lockstat self-test suite only
    kLockClassBench = 13,      // the in-guest benchmark's lock (bench=spinlock)
};

constexpr uint32_t kFirstUserLockClass = 16;
constexpr uint32_t kUserLockClassCount = spinlab::kMaxLockClasses - kFirstUserLockClass;  // 16

// Names of ids 0 .. kFirstUserLockClass-1; nullptr = spare (listed as "spareN").
constexpr const char* kKernelClassNames[kFirstUserLockClass] = {
    "other", "sched", "pmm", "heap", "console", "proc_table", "address_space", "pipe",
    "channel", "shm", "sysinfo", "selftest", "lockstat_test", "bench", nullptr, nullptr,
};

constexpr bool lock_class_name_eq(const char* a, const char* b) {
    while (*a && *a == *b) a++, b++;
    return *a == *b;
}

// The class of a kernel lock by its name; kLockClassOther for a name not in the table.
constexpr uint32_t lock_class_for_name(const char* name) {
    for (uint32_t i = 1; i < kFirstUserLockClass; i++)
        if (kKernelClassNames[i] && lock_class_name_eq(kKernelClassNames[i], name)) return i;
    return kLockClassOther;
}
static_assert(lock_class_for_name("sched") == kLockClassSched);
static_assert(lock_class_for_name("lockstat_test") == kLockClassLockstatTest);
static_assert(lock_class_for_name("no such lock") == kLockClassOther);

// The class table, entry i has id i; built by lockclass_init().
extern spinlab::LockClassEntry g_lock_classes[spinlab::kMaxLockClasses];
constexpr uint32_t kLockClassCount = spinlab::kMaxLockClasses;  // all ids are reported

void lockclass_init();                    // boot CPU, before the table is queried: fill names
void lockclass_count_lock(uint32_t id);   // spin_init*: one more lock of this class
