// kern/hpet.cc: see hpet.h. The HPET's registers, from the IA-PC HPET specification 1.0a:
// general capabilities (0x000: period in fs in bits 63:32, 64-bit counter in bit 13), general
// configuration (0x010: ENABLE_CNF in bit 0), main counter (0x0f0).
#include "hpet.h"

#include "console.h"

namespace {

constexpr uintptr_t kHpetBase = 0xfed00000;  // in the identity map's uncached top GiB
constexpr uint32_t kCapabilities = 0x000, kConfig = 0x010, kCounter = 0x0f0;
constexpr uint64_t kCounter64 = 1ull << 13, kEnable = 1;
// The specification allows periods up to 100 ns; anything else, all ones (no device) included,
// is not an HPET.
constexpr uint32_t kMaxPeriodFs = 100'000'000;

volatile uint64_t* regs;
uint32_t period_fs;

uint64_t rd(uint32_t reg) { return regs[reg / 8]; }
void wr(uint32_t reg, uint64_t v) { regs[reg / 8] = v; }

}  // namespace

void hpet_init() {
    auto* r = reinterpret_cast<volatile uint64_t*>(kHpetBase);
    const uint64_t caps = r[kCapabilities / 8];
    const uint32_t period = uint32_t(caps >> 32);
    if (period == 0 || period > kMaxPeriodFs || !(caps & kCounter64)) {
        kprintf("hpet: none at 0x%lx (capabilities 0x%lx): clock publications carry no reference\n",
                uint64_t(kHpetBase), caps);
        return;
    }
    regs = r;
    period_fs = period;
    if (!(rd(kConfig) & kEnable)) wr(kConfig, rd(kConfig) | kEnable);  // count; no interrupts
    kprintf("hpet: %lu Hz counter, a reference for the clock publications\n",
            uint64_t(1'000'000'000'000'000ull / period));
}

bool hpet_present() { return regs != nullptr; }
uint64_t hpet_read() { return rd(kCounter); }
uint32_t hpet_period_fs() { return period_fs; }
