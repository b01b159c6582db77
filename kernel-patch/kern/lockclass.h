// kern/lockclass.h: the lock classes of lockstat. Every spinlock belongs to one class;
// lockstat keeps its counters per CPU per class (abi/spinlab/perfdata.h), and the class table
// (id, name, locks set up) is what sysinfo's kSpinlabLockClassTable answers.
//
// Layout of the kMaxLockClasses (32) ids, fixed so that guest programs and analysis can rely
// on it (they should still look names up in the class table):
//
//   0                  "other": a lock set up at run time (spin_init) with a name that is not
//                      in kKernelClassNames below
//   1 .. 15            one class per named kernel lock (sched, pmm, heap, console, ...);
//                      unused ids are "spareN" and may be given a name later
//   16 .. 31           "user0" .. "user15": reserved for guest workloads' locks (lockbench,
//                      kmix). The system call that lets ring 3 take instrumented locks maps
//                      its workload class k to id kFirstUserLockClass + k; the kernel itself
//                      never uses these ids.
//
// A statically initialised lock (SPINLOCK_INIT("name")) gets its class from its name at
// compile time, and a name without a class does not compile (static_lock_class); spin_init
// does the same at run time (falling back to "other"); spin_init_class gives an explicit class
// (user classes). To give a new kernel lock its own class, add its name to kKernelClassNames
// in place of a spare (the name must be exactly the one passed to SPINLOCK_INIT / spin_init)
// and give it a rank.
//
// Lock order. A CPU that holds locks may only take a lock of a higher rank: locks are taken
// in the order of kLockClassRank and released in any order. Locks of the same class may nest
// (two address spaces, say); "other" and the user classes have no rank and are not checked.
// The order, first taken to last, and the code that nests them:
//
//   selftest, lockstat_test, bench   self-test and benchmark locks, outermost: what they test
//                                    takes kernel locks under them
//   channel                          the host channel's receive lock; a request is served
//                                    under it (sysinfo)
//   sysinfo                          held across a whole set, which takes the kernel's locks
//   proc_table                       proc.cc (thread_start under g_proc_lock takes sched),
//                                    lockstat.cc (map_lockstat maps pages: address_space)
//   word_wait                        word_wait.cc: reads the waiter's word (address_space) and
//                                    sleeps or wakes (sched) under it
//   address_space                    address_space.cc: page tables are allocated under it (pmm, heap)
//   sched                            the scheduler; wakeups from anywhere above
//   heap, pmm                        allocators: leaves but for the console
//   pci                              the configuration port pair
//   console                          innermost: a panic, a lockup report or a kprintf may
//                                    print under any lock
//
// In the self-test kernel (selftest= on the command line) every acquisition checks the order
// (spinlock.cc): taking a lock of a lower rank than one this CPU holds panics with both locks'
// names and the sites that took them.
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
    // 7 is spare
    kLockClassChannel = 8,     // the host control channel server
    // 9 is spare
    kLockClassSysinfo = 10,    // serialises set_system_information
    kLockClassSelftest = 11,   // the self-test runner's own lock
    kLockClassLockstatTest = 12,  // locks of the lockstat self-test suite only
    kLockClassBench = 13,      // the in-guest benchmark's lock (bench=spinlock)
    kLockClassPci = 14,        // the PCI configuration address/data port pair
    kLockClassWordWait = 15,   // the wait queue of kSysWordWait/kSysWordWake (kern/word_wait.h)
};

constexpr uint32_t kFirstUserLockClass = 16;
constexpr uint32_t kUserLockClassCount = spinlab::kMaxLockClasses - kFirstUserLockClass;  // 16

// Names of ids 0 .. kFirstUserLockClass-1; nullptr = spare (listed as "spareN").
constexpr const char* kKernelClassNames[kFirstUserLockClass] = {
    "other", "sched", "pmm", "heap", "console", "proc_table", "address_space", nullptr,
    "channel", nullptr, "sysinfo", "selftest", "lockstat_test", "bench", "pci", "word_wait",
};

// Rank of each kernel class (the order above); 0: not ranked, not checked.
constexpr uint8_t kLockClassRank[kFirstUserLockClass] = {
    /* other */ 0,          /* sched */ 60,   /* pmm */ 80,       /* heap */ 70,
    /* console */ 100,      /* proc_table */ 40, /* address_space */ 50, /* spare7 */ 0,
    /* channel */ 20,       /* spare9 */ 0,   /* sysinfo */ 30,   /* selftest */ 10,
    /* lockstat_test */ 10, /* bench */ 10,   /* pci */ 90,       /* word_wait */ 45,
};
constexpr uint8_t lock_class_rank(uint32_t id) {
    return id < kFirstUserLockClass ? kLockClassRank[id] : 0;
}
static_assert(lock_class_rank(kLockClassProcTable) < lock_class_rank(kLockClassSched));
static_assert(lock_class_rank(kLockClassProcTable) < lock_class_rank(kLockClassAddressSpace));

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

// Not constexpr, on purpose: static_lock_class reaches it only for a name without a class,
// and a call to it cannot be evaluated at compile time, so such a SPINLOCK_INIT does not build.
void spinlock_init_names_a_lock_without_a_class();

// The class of a statically initialised lock; an unclassed name is a compile error.
consteval uint32_t static_lock_class(const char* name) {
    const uint32_t id = lock_class_for_name(name);
    if (id == kLockClassOther) spinlock_init_names_a_lock_without_a_class();
    return id;
}

// The class table, entry i has id i; built by lockclass_init().
extern spinlab::LockClassEntry g_lock_classes[spinlab::kMaxLockClasses];
constexpr uint32_t kLockClassCount = spinlab::kMaxLockClasses;  // all ids are reported

void lockclass_init();                    // boot CPU, before the table is queried: fill names
void lockclass_count_lock(uint32_t id);   // spin_init*: one more lock of this class
