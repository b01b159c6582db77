// kern/lockclass.cc: the lock class table (see lockclass.h).
#include "lockclass.h"

#include "../lib/format.h"

spinlab::LockClassEntry g_lock_classes[spinlab::kMaxLockClasses];

void lockclass_init() {
    for (uint32_t i = 0; i < spinlab::kMaxLockClasses; i++) {
        spinlab::LockClassEntry& e = g_lock_classes[i];
        e.id = i;
        char* n = e.name;
        const size_t len = sizeof e.name;
        if (i >= kFirstUserLockClass) format(n, len, "user%u", i - kFirstUserLockClass);
        else if (kKernelClassNames[i]) format(n, len, "%s", kKernelClassNames[i]);
        else format(n, len, "spare%u", i);
    }
}

void lockclass_count_lock(uint32_t id) {
    // Any CPU, any context: one atomic add (readers copy the table racily and accept it).
    if (id < spinlab::kMaxLockClasses) __atomic_fetch_add(&g_lock_classes[id].lock_count, 1, __ATOMIC_RELAXED);
}
