// kern/main.cc: boot is a script. kmain runs once on the boot CPU; init_cpu runs on every CPU
// (the one place for per-CPU initialisation, as Windows' ExpInitializeExecutive is, where the
// original WRK experiment allocated its per-CPU counters).
#include <stdint.h>

#include "../arch/x86.h"
#include "../lib/format.h"
#include "spinlab/syscall.h"
#include "acpi.h"
#include "bootopts.h"
#include "console.h"
#include "gdt.h"
#include "ioapic.h"
#include "bench.h"
#include "stackprobe.h"
#include "kshell.h"
#include "kvm.h"
#include "lockclass.h"
#include "channel_device.h"
#include "lockstat.h"
#include "locktrace.h"
#include "hpet.h"
#include "lapic.h"
#include "mem.h"
#include "multiboot.h"
#include "proc.h"
#include "region.h"
#include "prcb.h"
#include "sched.h"
#include "selftest.h"
#include "smp.h"
#include "sysinfo_glue.h"
#include "trap.h"

void init_cpu() {
    lockstat_init_cpu();   // PRCB perf data, zeroed
    kvm_init_cpu();        // this CPU's steal time area registered, when KVM offers it
    gdt_init_cpu();        // segments and this CPU's TSS
    trap_init_cpu();       // load the IDT
    lapic_init_cpu();      // enable the local APIC, start the periodic timer
    sched_init_cpu();      // the boot stack becomes this CPU's idle thread
    __atomic_store_n(&this_cpu()->online, true, __ATOMIC_RELEASE);
}

namespace {

// Runs the first program (init= or /bin/sh) and leaves QEMU with its verdict when it ends.
[[noreturn]] void run_first_program(const char* line) {
    char buf[256];
    format(buf, sizeof buf, "%s", line);
    const char* argv[spinlab::kMaxArgs];
    int argc = 0;
    for (char* p = buf; *p && argc < spinlab::kMaxArgs;) {
        while (*p == ' ') *p++ = '\0';
        if (!*p) break;
        argv[argc++] = p;
        while (*p && *p != ' ') p++;
    }
    int64_t pid = argc ? proc_spawn(argv[0], argv, argc, true, nullptr) : -spinlab::kErrInval;
    if (pid < 0) {
        kprintf("init: cannot start '%s': %s\n", line, spinlab::error_name(pid));
        qemu_exit(kExitFail);
    }
    int code = 0;
    proc_wait(nullptr, int(pid), &code);
    kprintf("init: %s exited with status %d\n", argv[0], code);
    qemu_exit(code == 0 ? kExitPass : kExitFail);
}

void main_thread(void*) {
    if (g_boot.selftest[0]) selftest_run(g_boot.selftest);  // does not return
    if (g_boot.bench[0]) bench_run(g_boot.bench);           // does not return
    if (g_boot.stackprobe) stackprobe_start();
    if (g_boot.init[0]) run_first_program(g_boot.init);
    if (proc_initrd_present()) run_first_program("/bin/sh");
    kshell_run();  // no ramdisk: the kernel's own shell
}

}  // namespace

extern "C" void kmain(uint32_t magic, uint32_t mb_info) {
    prcb_init_cpu(0);      // GS base: this_cpu() works from here on
    console_init();        // COM1, for everything printed below
    if (magic != kMultibootLoaderMagic) panic("not started by a multiboot loader (0x%x)", magic);
    auto* mb = reinterpret_cast<const MultibootInfo*>(uintptr_t(mb_info));
    const char* cmdline = (mb->flags & kMbCmdline) ? reinterpret_cast<const char*>(uintptr_t(mb->cmdline)) : "";
    kprintf("spinlab kernel: cmdline '%s'\n", cmdline);
    bootopts_init(cmdline);  // refuse to boot on a bad option; sets the lock algorithm
    lockclass_init();      // the lock class table (names of kern/lockclass.h)
    kvm_init();            // hypervisor signature, KVM steal time / PV yield features
    g_timer_hz = g_boot.hz;
    pmm_init(mb_info);     // physical frames from the memory map
    heap_init();           // kmalloc
    if ((mb->flags & kMbMods) && mb->mods_count) {  // the initial ramdisk: module 0
        auto* mod = reinterpret_cast<const MultibootModule*>(uintptr_t(mb->mods_addr));
        proc_set_initrd(reinterpret_cast<const uint8_t*>(uintptr_t(mod->start)), mod->end - mod->start);
    }
    trap_init();           // IDT entries for every vector
    acpi_init();           // CPUs and the I/O APIC from the MADT
    lapic_init();          // calibrate the TSC and the LAPIC timer against the PIT
    hpet_init();           // the clock publications' reference clock, if there is an HPET
    region_init(acpi_madt().ncpus < g_boot.maxcpus ? acpi_madt().ncpus : g_boot.maxcpus);
                           // the ivshmem region the host reads, if QEMU gave us one
    region_use_for_lockstat();  // per-CPU perf data there, before any CPU's lockstat init
    ioapic_init();         // every input masked, legacy PIC off
    sched_init();          // thread table, idle threads
    init_cpu();            // per-CPU init for the boot CPU
    console_init_irq();    // COM1 receive interrupt to this CPU
    smp_init();            // start the other CPUs
    locktrace_init();      // the trace area (the region's trace section, else private pages)
    sysinfo_init();        // query/set system information over every online CPU
    channel_init();        // the host's control channel on COM2 (same handler)
    proc_init();           // user processes: fault handler, reaper
    kprintf("spinlab kernel: %u CPUs online, TSC %lu MHz, %lu MiB free, timer %u Hz\n", g_ncpus,
            g_tsc_hz / 1000000, pmm_free_frames() * 4096 >> 20, g_timer_hz);
    if (!thread_spawn("main", main_thread, nullptr)) panic("cannot create the main thread");
    scheduler();
}
