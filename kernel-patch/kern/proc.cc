// kern/proc.cc: processes: loading ELF programs from the initial ramdisk into their own
// address space, entering ring 3, threads of a process, exit and reaping.
#include "proc.h"

#include "../arch/x86.h"
#include "../lib/argpack.h"
#include "../lib/elf.h"
#include "../lib/format.h"
#include "../lib/user_range.h"
#include "../lib/ustar.h"
#include "console.h"
#include "gdt.h"
#include "locktrace.h"
#include "mem.h"
#include "trap.h"

Spinlock g_proc_lock = SPINLOCK_INIT("proc_table");

extern "C" [[noreturn]] void enter_user_frame(TrapFrame* tf);   // arch/vectors.S

namespace {

// g_proc_lock must be held when using these:
Process procs[kMaxProcs];
int next_pid = 1;
const char reaper_chan = 0;

Process kernel_parent;     // the parent of processes the kernel itself starts
const uint8_t* initrd;
uint64_t initrd_size;

struct UserStart {
    uint64_t rip, rsp, rdi, rsi;
};

// A user thread's kernel half starts here: enter ring 3 through the interrupt-return path.
void user_thread_main(void* arg) {
    UserStart s = *static_cast<UserStart*>(arg);
    kfree(arg);
    TrapFrame tf{};
    tf.rip = s.rip;
    tf.rsp = s.rsp;
    tf.rdi = s.rdi;
    tf.rsi = s.rsi;
    tf.cs = kUserCs;
    tf.ss = kUserDs;
    tf.rflags = 0x202;  // IF
    arch::cli();        // no interrupt between swapgs and iretq
    enter_user_frame(&tf);
}

Thread* new_user_thread(Process* p, uint64_t rip, uint64_t rsp, uint64_t rdi, uint64_t rsi) {
    auto* s = static_cast<UserStart*>(kmalloc(sizeof(UserStart)));
    if (!s) return nullptr;
    *s = {rip, rsp, rdi, rsi};
    Thread* t = thread_create(p->name, user_thread_main, s);
    if (!t) {
        kfree(s);
        return nullptr;
    }
    t->proc = p;
    return t;
}

const char* basename(const char* path) {
    const char* b = path;
    for (const char* q = path; *q; q++)
        if (*q == '/') b = q + 1;
    return b;
}

// Reaps a zombie: joins its threads (frees their kernel stacks), frees its address space and
// its slot. The caller has claimed it (parent set to &kernel_parent... or itself) and does
// not hold g_proc_lock.
int reap(Process* p) {
    for (Thread*& t : p->threads)
        if (t) {
            thread_join(t);
            t = nullptr;
        }
    as_destroy(p->as);
    locktrace_process_reaped(p);  // its rings: unmapped with the address space
    // The pid is negated once a waiter has claimed the process (proc_wait).
    locktrace_memory_event(spinlab::TraceEventType::kMemoryUnmap, uint32_t(p->pid < 0 ? -p->pid : p->pid),
                           spinlab::kUserBase,
                           spinlab::kUserStackTop - spinlab::kUserBase, kTraceMemUser);
    SpinGuard g(&g_proc_lock);
    int code = p->exit_code;
    p->state = ProcState::kUnused;
    return code;
}

void reaper(void*) {
    for (;;) {
        Process* z = nullptr;
        {
            SpinGuard g(&g_proc_lock);
            for (;;) {
                for (Process& p : procs)
                    if (p.state == ProcState::kZombie && p.parent == nullptr) z = &p;
                if (z) break;
                sleep_on(&reaper_chan, &g_proc_lock);
            }
            z->parent = &kernel_parent;  // claimed: nobody else reaps it
            z->pid = -z->pid;
        }
        reap(z);
    }
}

void user_fault(TrapFrame* tf) {
    Process* p = current_proc();
    if (!p) return;  // a kernel thread: not ours to handle
    const char* why = trap_name(tf->vector);
    if (tf->vector == 14)
        kprintf("proc %s (pid %d): %s at rip 0x%lx, address 0x%lx (%s %s): killed\n", p->name,
                p->pid, why, tf->rip, arch::read_cr2(), tf->error & 1 ? "protection," : "not present,",
                tf->error & 2 ? "write" : "read");
    else
        kprintf("proc %s (pid %d): %s at rip 0x%lx: killed\n", p->name, p->pid, why, tf->rip);
    proc_exit(128 + int(tf->vector));
}

}  // namespace

void proc_init() {
    g_user_fault_handler = user_fault;
    if (!thread_spawn("reaper", reaper, nullptr)) panic("proc: cannot start the reaper");
}

void proc_set_initrd(const uint8_t* data, uint64_t size) {
    initrd = data;
    initrd_size = size;
}
bool proc_initrd_present() { return initrd != nullptr; }

void proc_for_each(void (*fn)(const Process* p)) {
    SpinGuard g(&g_proc_lock);
    for (const Process& p : procs)
        if (p.state == ProcState::kAlive) fn(&p);
}

Process* current_proc() {
    Thread* t = current_thread();
    return t ? t->proc : nullptr;
}

int64_t proc_spawn(const char* path, const char* const* argv, int argc, bool privileged,
                   Process* parent) {
    ustar::File f;
    if (!initrd || !ustar::find(initrd, initrd_size, path, &f)) return -spinlab::kErrNoEnt;
    elf::Image img;
    elf::Error e = elf::parse(f.data, f.size, spinlab::kUserBase, spinlab::kUserMapBase, &img);
    if (e != elf::Error::kOk) {
        kprintf("spawn %s: %s\n", path, elf::error_name(e));
        return -spinlab::kErrNoEnt;
    }
    AddressSpace* as = as_create();
    if (!as) return -spinlab::kErrNoMem;
    bool ok = true;
    for (int i = 0; i < img.nsegments && ok; i++) {
        const elf::Segment& s = img.segments[i];
        uint64_t lo = s.vaddr & ~0xfffull, hi = (s.vaddr + s.memsz + 0xfff) & ~0xfffull;
        ok = as_map_zeroed(as, lo, hi - lo, s.writable, s.executable) &&
             as_write(as, s.vaddr, f.data + s.offset, s.filesz) == 0;
    }
    uint64_t stack_lo = spinlab::kUserStackTop - spinlab::kUserStackSize;
    ok = ok && as_map_zeroed(as, stack_lo, spinlab::kUserStackSize, true, false);
    static constexpr size_t kArgArea = spinlab::kMaxArgBytes + (spinlab::kMaxArgs + 1) * 8 + 64;
    auto* area = static_cast<uint8_t*>(kmalloc(kArgArea));
    ArgPack pack{};
    ok = ok && area && argpack(argv, argc, spinlab::kUserStackTop, area, kArgArea, &pack) &&
         as_write(as, pack.rsp, area + kArgArea - pack.used, pack.used) == 0;
    kfree(area);
    if (!ok) {
        as_destroy(as);
        return -spinlab::kErrNoMem;
    }
    Process* p = nullptr;
    {
        SpinGuard g(&g_proc_lock);
        for (Process& s : procs)
            if (s.state == ProcState::kUnused) {
                p = &s;
                break;
            }
        if (p) {
            *p = Process{};
            p->state = ProcState::kAlive;
            p->pid = next_pid++;
            p->parent = parent ? parent : &kernel_parent;
            p->privileged = privileged;
            p->as = as;
            format(p->name, sizeof p->name, "%s", basename(path));
            p->live_threads = 1;
        }
    }
    if (!p) {
        as_destroy(as);
        return -spinlab::kErrNoMem;
    }
    Thread* t = new_user_thread(p, img.entry, pack.rsp, uint64_t(argc), pack.argv);
    if (!t) {
        SpinGuard g(&g_proc_lock);
        p->state = ProcState::kUnused;
        as_destroy(as);
        return -spinlab::kErrNoMem;
    }
    p->threads[0] = t;
    int pid = p->pid;
    locktrace_process_event(spinlab::TraceEventType::kProcessStart, p);
    for (int i = 0; i < img.nsegments; i++) {  // what was mapped above, now that it has a pid
        const elf::Segment& s = img.segments[i];
        const uint64_t lo = s.vaddr & ~0xfffull, hi = (s.vaddr + s.memsz + 0xfff) & ~0xfffull;
        locktrace_memory_event(spinlab::TraceEventType::kMemoryMap, uint32_t(pid), lo, hi - lo,
                               kTraceMemUser | (s.writable ? kTraceMemWritable : 0));
    }
    locktrace_memory_event(spinlab::TraceEventType::kMemoryMap, uint32_t(pid), stack_lo, spinlab::kUserStackSize,
                           kTraceMemUser | kTraceMemWritable);
    thread_start(t);
    return pid;
}

int64_t proc_wait(Process* parent, int pid, int* exit_code) {
    if (!parent) parent = &kernel_parent;
    Process* c = nullptr;
    {
        SpinGuard g(&g_proc_lock);
        for (Process& p : procs)
            if (p.state != ProcState::kUnused && p.pid == pid) c = &p;
        if (!c) return -spinlab::kErrNoEnt;
        if (c->parent != parent) return -spinlab::kErrChild;
        while (c->state != ProcState::kZombie) sleep_on(c, &g_proc_lock);
        c->pid = -c->pid;  // claimed: a second wait finds nothing
    }
    *exit_code = reap(c);
    return pid;
}

int64_t proc_thread_create(Process* p, uint64_t entry, uint64_t arg, uint64_t stack_top) {
    if (!user_range_ok(entry, 1) || !user_range_ok(stack_top - 16, 16)) return -spinlab::kErrFault;
    // The entry is an ordinary function: it expects rsp % 16 == 8, as after a call.
    Thread* t = new_user_thread(p, entry, (stack_top & ~15ull) - 8, arg, 0);
    if (!t) return -spinlab::kErrNoMem;
    {
        SpinGuard g(&g_proc_lock);
        int slot = -1;
        for (int i = 0; i < kMaxProcThreads; i++)
            if (!p->threads[i]) {
                slot = i;
                break;
            }
        if (slot >= 0 && !p->killed) {
            p->threads[slot] = t;
            p->live_threads++;
            thread_start(t);
            return t->tid;
        }
    }
    kfree(t->arg);      // never started: its start record and stack go back
    thread_discard(t);
    return -spinlab::kErrNoMem;
}

int64_t proc_thread_join(Process* p, int tid) {
    Thread* t = nullptr;
    {
        SpinGuard g(&g_proc_lock);
        for (Thread*& s : p->threads)
            if (s && s->tid == tid && s != current_thread()) {
                t = s;
                s = nullptr;  // claimed: nobody else joins it
                break;
            }
    }
    if (!t) return -spinlab::kErrNoEnt;
    return thread_join(t);
}

void proc_thread_exit(int code) {
    Process* p = current_proc();
    {
        SpinGuard g(&g_proc_lock);
        if (--p->live_threads == 0) {
            if (!p->killed) p->exit_code = code;
            p->state = ProcState::kZombie;
            locktrace_process_event(spinlab::TraceEventType::kProcessEnd, p);
            for (Process& c : procs)  // children become orphans, reaped by the reaper
                if (c.state != ProcState::kUnused && c.parent == p) {
                    c.parent = nullptr;
                    if (c.state == ProcState::kZombie) wakeup(&reaper_chan);
                }
            if (p->parent == nullptr) wakeup(&reaper_chan);
            else wakeup(p);
        }
    }
    thread_exit(code);
}

void proc_exit(int code) {
    Process* p = current_proc();
    {
        SpinGuard g(&g_proc_lock);
        if (!p->killed) {
            p->killed = true;
            p->exit_code = code;
        }
    }
    proc_thread_exit(code);
}

int proc_thread_slot(Process* p, const Thread* t) {
    SpinGuard g(&g_proc_lock);
    for (int i = 0; i < kMaxProcThreads; i++)
        if (p->threads[i] == t) return i;
    return -1;
}

void proc_check_killed() {
    Process* p = current_proc();
    if (p && __atomic_load_n(&p->killed, __ATOMIC_RELAXED)) proc_thread_exit(p->exit_code);
}
