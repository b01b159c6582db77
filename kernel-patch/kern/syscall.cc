// kern/syscall.cc: system-call dispatch. Every argument a program passes is checked here or in
// the copy functions (kern/address_space.h) before use; a bad one returns -spinlab::Error.
#include "locktrace.h"
#include "../arch/x86.h"
#include "../lib/user_range.h"
#include "console.h"
#include "lapic.h"
#include "mem.h"
#include "prcb.h"
#include "proc.h"
#include "sched.h"
#include "spinlab/status.h"
#include "spinlab/syscall.h"
#include "trap.h"
#include "lockstat.h"
#include "sysinfo_glue.h"
#include "word_wait.h"

using namespace spinlab;

namespace {

int64_t sys_write(Process* p, uint64_t fd, uint64_t buf, uint64_t len) {
    if (fd != 1 && fd != 2) return -kErrInval;
    if (!user_range_ok(buf, len)) return -kErrFault;
    char chunk[256];
    for (uint64_t done = 0; done < len;) {
        uint64_t n = len - done < sizeof chunk ? len - done : sizeof chunk;
        if (int64_t r = copy_from_user(p->as, chunk, buf + done, n)) return r;
        console_write(chunk, n);
        done += n;
    }
    return int64_t(len);
}

int64_t sys_read(Process* p, uint64_t fd, uint64_t buf, uint64_t len) {
    if (fd != 0) return -kErrInval;
    if (len == 0 || !user_range_ok(buf, len)) return -kErrFault;
    char line[256];
    size_t n = console_readline(line, len < sizeof line ? len : sizeof line);
    if (int64_t r = copy_to_user(p->as, buf, line, n)) return r;
    return int64_t(n);
}

int64_t sys_spawn(Process* p, uint64_t upath, uint64_t uargv, uint64_t flags) {
    if (flags & ~kSpawnUnprivileged) return -kErrInval;
    char path[kMaxPath];
    if (int64_t r = copy_string_from_user(p->as, path, upath, sizeof path)) return r;
    // argv: up to kMaxArgs user pointers, NULL-terminated, strings copied into one buffer.
    auto* strings = static_cast<char*>(kmalloc(kMaxArgBytes));
    if (!strings) return -kErrNoMem;
    const char* argv[kMaxArgs];
    int argc = 0;
    size_t used = 0;
    int64_t err = 0;
    for (;; argc++) {
        uint64_t ptr;
        if ((err = copy_from_user(p->as, &ptr, uargv + 8 * uint64_t(argc), 8))) break;
        if (ptr == 0) break;
        if (argc == kMaxArgs) {
            err = -kErrInval;
            break;
        }
        if ((err = copy_string_from_user(p->as, strings + used, ptr, kMaxArgBytes - used))) break;
        argv[argc] = strings + used;
        while (strings[used]) used++;
        used++;
    }
    if (!err) {
        bool privileged = p->privileged && !(flags & kSpawnUnprivileged);
        err = proc_spawn(path, argv, argc, privileged, p);
    }
    kfree(strings);
    return err;
}

int64_t sys_wait(Process* p, uint64_t pid, uint64_t ucode) {
    if (ucode && !user_range_ok(ucode, 4)) return -kErrFault;
    int code = 0;
    int64_t r = proc_wait(p, int(pid), &code);
    if (r >= 0 && ucode) {
        int32_t c = code;
        if (int64_t e = copy_to_user(p->as, ucode, &c, 4)) return e;
    }
    return r;
}

// The system-information calls: the sysinfo handler reaches the caller's buffer only through
// these copies, which check it against the address space (a bad one: STATUS_ACCESS_VIOLATION).
struct UserBuffer {
    AddressSpace* as;
    uint64_t base;
};
bool user_copy_in(void* ctx, uint32_t off, void* dst, uint32_t n) {
    auto* u = static_cast<UserBuffer*>(ctx);
    return copy_from_user(u->as, dst, u->base + off, n) == 0;
}
bool user_copy_out(void* ctx, uint32_t off, const void* src, uint32_t n) {
    auto* u = static_cast<UserBuffer*>(ctx);
    return copy_to_user(u->as, u->base + off, src, n) == 0;
}

int64_t sys_sysinfo(Process* p, bool set, uint64_t cls, uint64_t buf, uint64_t len, uint64_t uret) {
    constexpr uint32_t kAccessViolation = uint32_t(Status::kAccessViolation);
    if (len > 0xffffffffull || !user_range_ok(buf, len)) return kAccessViolation;
    if (uret && !user_range_ok(uret, 4)) return kAccessViolation;
    UserBuffer u{p->as, buf};
    sysinfo::Buffer b{uint32_t(len), &u, user_copy_in, user_copy_out};
    uint32_t ret_len = 0;
    uint32_t st = set ? sysinfo_set(uint32_t(cls), b, p->privileged, &ret_len)
                      : sysinfo_query(uint32_t(cls), b, &ret_len);
    if (uret && copy_to_user(p->as, uret, &ret_len, 4) != 0) return kAccessViolation;
    return st;
}

// kSysTraceSpinlock: only a process whose locks are counted as the kernel's (kSysMapLockstat)
// writes spinlock events, which the host reads as the kernel's own.
int64_t sys_trace_spinlock(Process* p, uint64_t uevent) {
    if (!p->lockstat_mapped) return -kErrPerm;
    if (!user_range_ok(uevent, sizeof(spinlab::TraceSpinlockEvent))) return -kErrFault;
    spinlab::TraceSpinlockEvent e;
    if (int64_t r = copy_from_user(p->as, &e, uevent, sizeof e)) return r;
    if (e.rules == 0) return -kErrInval;
    locktrace_user_spinlock(e);
    return 0;
}

// kSysMapLockstat: the counters into p's address space (lockstat layer), and the memory event of
// the first mapping here, above it: the per-CPU perf data and, with KVM steal time, its page.
int64_t map_lockstat(Process* p, uint64_t uout) {
    bool before;
    {
        SpinGuard g(&g_proc_lock);  // lockstat_mapped is guarded by it (proc.h)
        before = p->lockstat_mapped;
    }
    const int64_t r = lockstat_map_into(p, uout);
    LockstatMapping m;
    if (r == 0 && !before && copy_from_user(p->as, &m, uout, sizeof m) == 0) {
        locktrace_memory_event(TraceEventType::kMemoryMap, uint32_t(p->pid), m.perf_base,
                               m.perf_stride * m.cpu_count, kTraceMemUser | kTraceMemWritable);
        if (m.steal_base)
            locktrace_memory_event(TraceEventType::kMemoryMap, uint32_t(p->pid), m.steal_base, 4096, kTraceMemUser);
        if (m.vcpu_state_base)
            locktrace_memory_event(TraceEventType::kMemoryMap, uint32_t(p->pid), m.vcpu_state_base & ~4095ull,
                                   4096, kTraceMemUser);
        locktrace_memory_event(TraceEventType::kMemoryMap, uint32_t(p->pid), m.params_base, 4096, kTraceMemUser);
    }
    return r;
}

int64_t dispatch(Process* p, TrapFrame* tf) {
    uint64_t a0 = tf->rdi, a1 = tf->rsi, a2 = tf->rdx, a3 = tf->r10;
    switch (tf->rax) {
    case kSysWrite: return sys_write(p, a0, a1, a2);
    case kSysRead: return sys_read(p, a0, a1, a2);
    case kSysExit: proc_exit(int(a0));
    case kSysSpawn: return sys_spawn(p, a0, a1, a2);
    case kSysWait: return sys_wait(p, a0, a1);
    case kSysGetpid: return p->pid;
    case kSysThreadCreate: return proc_thread_create(p, a0, a1, a2);
    case kSysThreadJoin: return proc_thread_join(p, int(a0));
    case kSysThreadExit: proc_thread_exit(int(a0));
    case kSysYield: yield(); return 0;
    case kSysSleep:
        if (a0 > 3600ull * 1000000) return -kErrInval;
        sleep_us(a0);
        return 0;
    case kSysPin:
        if (int64_t(a0) != -1 && a0 >= g_ncpus) return -kErrInval;
        thread_set_affinity(int(int64_t(a0)));
        return 0;
    case kSysTscHz: return int64_t(g_tsc_hz);
    case kSysCpuCount: return g_ncpus;
    case kSysCpuNumber: return cpu_number();
    case kSysPrivileged: return p->privileged ? 1 : 0;
    case kSysMapAnon: {
        uint64_t va = as_map_anon(p->as, a0);
        if (va)
            locktrace_memory_event(TraceEventType::kMemoryMap, uint32_t(p->pid), va, (a0 + 4095) & ~4095ull,
                                   kTraceMemUser | kTraceMemWritable);
        return va ? int64_t(va) : -kErrNoMem;
    }
    case kSysQuerySystemInformation: return sys_sysinfo(p, false, a0, a1, a2, a3);
    case kSysSetSystemInformation: return sys_sysinfo(p, true, a0, a1, a2, 0);
    case kSysMapLockstat:
        if (!p->privileged) return -kErrPerm;
        if (!user_range_ok(a0, sizeof(LockstatMapping))) return -kErrFault;
        return map_lockstat(p, a0);
    case kSysTraceSpinlock: return sys_trace_spinlock(p, a0);
    case kSysWordWait:
        if (a1 > 0xffffffffull) return -kErrInval;
        return word_wait(p, a0, uint32_t(a1));
    case kSysWordWake: return word_wake(p, a0, a1);
    case kSysTraceRing:
        if (a0 == kTraceRingMap) return locktrace_ring_map(p);
        if (a0 == kTraceRingDrain) return locktrace_ring_drain();
        return -kErrInval;
    default: return -kErrNoSys;
    }
}

}  // namespace

// From trap_dispatch for `int $0x80` from ring 3 (interrupts off on entry).
void syscall_dispatch(TrapFrame* tf) {
    arch::sti();  // system calls run with interrupts on, preemptible like user code
    Process* p = current_proc();
    if (!p) panic("system call from a thread with no process");
    proc_check_killed();
    const uint64_t number = tf->rax;
    locktrace_syscall_enter(number, tf->rdi, tf->rsi, tf->rdx);
    tf->rax = uint64_t(dispatch(p, tf));
    locktrace_syscall_exit(number, tf->rax);
}
