// kern/smp.cc: every AP starts in real mode at the trampoline (arch/ap_trampoline.S) copied to
// 0x8000, reaches long mode on the boot page tables and calls ap_main() with its PRCB number.
#include "smp.h"

#include "../arch/x86.h"
#include "acpi.h"
#include "bootopts.h"
#include "console.h"
#include "lapic.h"
#include "mem.h"
#include "prcb.h"
#include "sched.h"

extern "C" char ap_trampoline_start[], ap_trampoline_end[], ap_tramp_params[];
void init_cpu();   // kern/main.cc: the per-CPU init script

namespace {

constexpr uint64_t kTrampBase = 0x8000;

struct TrampParams {
    uint64_t cr3, stack, entry, arg;
};

void ap_main(uint64_t number) {
    prcb_init_cpu(uint32_t(number));
    init_cpu();
    scheduler();
}

}  // namespace

void smp_init() {
    const acpi::Madt& m = acpi_madt();
    uint32_t bsp_apic = lapic_id();
    uint64_t size = uint64_t(ap_trampoline_end - ap_trampoline_start);
    __builtin_memcpy(reinterpret_cast<void*>(kTrampBase), ap_trampoline_start, size);
    auto* params = reinterpret_cast<volatile TrampParams*>(
        kTrampBase + uint64_t(ap_tramp_params - ap_trampoline_start));

    // Number CPUs in MADT order with the boot CPU as 0.
    uint32_t n = 1;
    g_prcbs[0].apic_id = bsp_apic;
    for (uint32_t i = 0; i < m.ncpus && n < g_boot.maxcpus; i++) {
        if (m.apic_ids[i] == bsp_apic) continue;
        g_prcbs[n++].apic_id = m.apic_ids[i];
    }
    g_ncpus = n;
    for (uint32_t cpu = 1; cpu < n; cpu++) {
        uint64_t stack = pages_alloc(kKernelStackSize / 4096);
        if (!stack) panic("smp: no memory for cpu %u's stack", cpu);
        params->cr3 = arch::read_cr3();
        params->stack = stack + kKernelStackSize;
        params->entry = uint64_t(ap_main);
        params->arg = cpu;
        arch::barrier();
        lapic_send_init_sipi(g_prcbs[cpu].apic_id, uint8_t(kTrampBase >> 12));
        // The AP copies nothing out of the parameter block after it sets online, so the next
        // AP's parameters can be written once this one is up.
        uint64_t deadline = arch::rdtsc_lfence() + g_tsc_hz * 5;
        while (!__atomic_load_n(&g_prcbs[cpu].online, __ATOMIC_ACQUIRE)) {
            if (arch::rdtsc_lfence() > deadline)
                panic("smp: cpu %u (apic id %u) did not come online within 5 s", cpu,
                      g_prcbs[cpu].apic_id);
            arch::pause();
        }
    }
}
