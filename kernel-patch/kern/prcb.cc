// kern/prcb.cc: the PRCB array and per-CPU setup of the GS base.
#include "prcb.h"

#include "lockstat.h"
#include "locktrace.h"

Prcb g_prcbs[kMaxCpus];
uint32_t g_ncpus = 1;

void prcb_init_cpu(uint32_t number) {
    Prcb* p = &g_prcbs[number];
    p->self = p;
    p->number = number;
    lockstat_early_cpu(p);  // perf data never null in the lock paths: a scratch block for now
    locktrace_early_cpu(p);  // this CPU's trace state (disarmed)
    // Kernel GS base = our PRCB. KERNEL_GS_BASE holds the user's value while in the kernel;
    // swapgs exchanges the two on entry from and exit to ring 3.
    arch::wrmsr(arch::kMsrGsBase, uint64_t(p));
    arch::wrmsr(arch::kMsrKernelGsBase, 0);
}
