// kern/ivshmem.cc: see ivshmem.h.
#include "ivshmem.h"

#include "../arch/x86.h"
#include "console.h"
#include "pci.h"

extern "C" uint64_t boot_pml4[512];

namespace {

constexpr uint16_t kVendorRedHat = 0x1af4, kDeviceIvshmem = 0x1110;
constexpr uint8_t kBar2 = 0x18, kBar3 = 0x1c, kCommand = 0x04;
// Where to put BAR 2 when the firmware did not: the start of the top GiB of the identity map,
// below the I/O APIC and local APIC (0xfec00000 and up) and above q35's MMCONFIG window.
constexpr uint64_t kDefaultBase = 0xc0000000ull;
constexpr uint64_t kMaxSize = 256ull << 20;

// The boot page tables map the top GiB uncached (MMIO). The region is host RAM: map its 2 MiB
// pages write-back, or every counter update would be an uncached write.
void map_write_back(uint64_t base, uint64_t size) {
    auto* pdpt = reinterpret_cast<uint64_t*>(boot_pml4[0] & ~0xfffull);
    for (uint64_t a = base & ~0x1fffffull; a < base + size; a += 0x200000) {
        auto* pd = reinterpret_cast<uint64_t*>(pdpt[a >> 30] & ~0xfffull);
        pd[(a >> 21) & 511] &= ~0x18ull;  // clear PCD and PWT
    }
    arch::write_cr3(arch::read_cr3());    // flush this CPU's TLB; the APs start later
}

}  // namespace

bool ivshmem_init(uint64_t* base, uint64_t* size) {
    *base = 0;
    *size = 0;
    PciAddress dev;
    if (!pci_find(kVendorRedHat, kDeviceIvshmem, &dev)) return false;
    uint32_t cmd = pci_read32(dev, kCommand);
    pci_write32(dev, kCommand, cmd & ~0x2u);  // memory decoding off while sizing
    uint32_t lo = pci_read32(dev, kBar2), hi = pci_read32(dev, kBar3);
    bool is64 = ((lo >> 1) & 3) == 2;
    pci_write32(dev, kBar2, ~0u);
    if (is64) pci_write32(dev, kBar3, ~0u);
    uint64_t mask = (pci_read32(dev, kBar2) & ~0xfull) | (is64 ? uint64_t(pci_read32(dev, kBar3)) << 32 : 0xffffffff00000000ull);
    uint64_t sz = ~mask + 1;
    uint64_t addr = (lo & ~0xfull) | (is64 ? uint64_t(hi) << 32 : 0);
    if (sz == 0 || sz > kMaxSize) {
        kprintf("ivshmem: BAR 2 size 0x%lx not supported (at most %lu MiB)\n", sz, kMaxSize >> 20);
        pci_write32(dev, kCommand, cmd);
        return false;
    }
    if (addr == 0 || addr + sz > 0xfec00000ull) addr = kDefaultBase;  // unassigned (qboot)
    pci_write32(dev, kBar2, uint32_t(addr) | (lo & 0xf));
    if (is64) pci_write32(dev, kBar3, uint32_t(addr >> 32));
    pci_write32(dev, kCommand, cmd | 0x2u);
    map_write_back(addr, sz);
    *base = addr;
    *size = sz;
    return true;
}
