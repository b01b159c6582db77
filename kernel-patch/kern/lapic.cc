// kern/lapic.cc: xAPIC through its MMIO page (identity-mapped, uncached).
#include "lapic.h"

#include "../arch/x86.h"
#include "console.h"
#include "prcb.h"

uint64_t g_tsc_hz;
uint32_t g_timer_hz = 100;

namespace {

volatile uint32_t* lapic;
uint32_t timer_ticks_per_sec;  // LAPIC timer counts per second at divide-by-16

enum : uint32_t {
    kId = 0x20, kTpr = 0x80, kEoi = 0xb0, kSvr = 0xf0, kIcrLo = 0x300, kIcrHi = 0x310,
    kLvtTimer = 0x320, kLvtLint0 = 0x350, kLvtLint1 = 0x360, kLvtError = 0x370,
    kTimerInit = 0x380, kTimerCur = 0x390, kTimerDiv = 0x3e0,
};

uint32_t rd(uint32_t reg) { return lapic[reg / 4]; }
void wr(uint32_t reg, uint32_t v) {
    lapic[reg / 4] = v;
    (void)lapic[kId / 4];  // read back: the write has reached the APIC before we go on
}

void icr_wait() {
    for (int i = 0; i < 1000000 && (rd(kIcrLo) & (1u << 12)); i++) arch::pause();
}

// PIT channel 2 as a one-shot 10 ms reference (its gate and output are on port 0x61).
constexpr uint32_t kPitHz = 1193182;
void pit_oneshot_start(uint32_t ticks) {
    arch::outb(0x61, (arch::inb(0x61) & ~0x02) | 0x01);  // gate on, speaker off
    arch::outb(0x43, 0xb0);                             // ch2, lo/hi, mode 0
    arch::outb(0x42, uint8_t(ticks));
    arch::outb(0x42, uint8_t(ticks >> 8));
    uint8_t g = arch::inb(0x61);                        // restart the count: gate low->high
    arch::outb(0x61, g & ~1);
    arch::outb(0x61, g | 1);
}
bool pit_done() { return arch::inb(0x61) & 0x20; }

}  // namespace

void lapic_init() {
    uint64_t base = arch::rdmsr(arch::kMsrApicBase) & ~0xfffull;
    lapic = reinterpret_cast<volatile uint32_t*>(base);
    wr(kSvr, 0x100 | kVectorSpurious);
    wr(kTimerDiv, 0x3);  // divide by 16
    // Calibrate: count LAPIC timer ticks and TSC cycles across 10 ms of PIT, best of 3
    // (the shortest window is the one least disturbed by a host preempting this vCPU).
    uint64_t best_tsc = ~0ull;
    uint32_t best_lapic = 0;
    for (int round = 0; round < 3; round++) {
        wr(kTimerInit, 0xffffffff);
        pit_oneshot_start(kPitHz / 100);
        uint64_t t0 = arch::rdtsc_lfence();
        uint32_t c0 = rd(kTimerCur);
        while (!pit_done()) arch::pause();
        uint64_t t1 = arch::rdtsc_lfence();
        uint32_t c1 = rd(kTimerCur);
        if (t1 - t0 < best_tsc) {
            best_tsc = t1 - t0;
            best_lapic = c0 - c1;
        }
    }
    wr(kTimerInit, 0);
    g_tsc_hz = best_tsc * 100;
    timer_ticks_per_sec = best_lapic * 100;
    if (g_tsc_hz == 0 || timer_ticks_per_sec == 0) panic("lapic: timer calibration failed");
}

void lapic_init_cpu() {
    wr(kSvr, 0x100 | kVectorSpurious);       // software-enable
    wr(kTpr, 0);
    wr(kLvtLint0, 1u << 16);                 // masked: the legacy PIC is off
    wr(kLvtLint1, 1u << 16);
    wr(kLvtError, 1u << 16);
    wr(kTimerDiv, 0x3);
    wr(kLvtTimer, (1u << 17) | kVectorTimer);  // periodic
    wr(kTimerInit, timer_ticks_per_sec / g_timer_hz);
    wr(kEoi, 0);
}

void lapic_timer_mask(bool masked) {
    wr(kLvtTimer, (1u << 17) | (masked ? 1u << 16 : 0u) | kVectorTimer);  // periodic, as lapic_init_cpu
}

uint32_t lapic_id() { return rd(kId) >> 24; }
void lapic_eoi() { wr(kEoi, 0); }

void lapic_send_ipi(uint32_t apic_id, uint8_t vector) {
    uint64_t f = irq_save();
    icr_wait();
    wr(kIcrHi, apic_id << 24);
    wr(kIcrLo, vector);  // fixed delivery, physical destination
    icr_wait();
    irq_restore(f);
}

void lapic_send_nmi(uint32_t apic_id) {
    uint64_t f = irq_save();
    icr_wait();
    wr(kIcrHi, apic_id << 24);
    wr(kIcrLo, 0x400);  // delivery mode NMI (100b), physical destination, vector ignored
    icr_wait();
    irq_restore(f);
}

void lapic_send_init_sipi(uint32_t apic_id, uint8_t page) {
    wr(kIcrHi, apic_id << 24);
    wr(kIcrLo, 0x4500);  // INIT, assert
    icr_wait();
    delay_us(10000);
    for (int i = 0; i < 2; i++) {  // the MP spec's SIPI twice
        wr(kIcrHi, apic_id << 24);
        wr(kIcrLo, 0x4600 | page);
        icr_wait();
        delay_us(200);
    }
}

void lapic_halt_others() {
    if (!lapic) return;
    uint32_t me = cpu_number();
    for (uint32_t i = 0; i < g_ncpus; i++)
        if (i != me && g_prcbs[i].online) {
            icr_wait();
            wr(kIcrHi, g_prcbs[i].apic_id << 24);
            wr(kIcrLo, kVectorHalt);
        }
}

void delay_us(uint64_t us) {
    uint64_t hz = g_tsc_hz ? g_tsc_hz : 1000000000ull;
    uint64_t end = arch::rdtsc_lfence() + us * (hz / 1000000);
    while (arch::rdtsc_lfence() < end) arch::pause();
}
