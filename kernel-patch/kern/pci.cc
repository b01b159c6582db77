// kern/pci.cc: see pci.h. Configuration mechanism #1: write the address (enable bit, bus,
// device, function, dword offset) to 0xcf8, then read or write the data at 0xcfc.
#include "pci.h"

#include "../arch/x86.h"
#include "spinlock.h"

namespace {

Spinlock pci_lock = SPINLOCK_INIT("pci");  // the address/data port pair is one shared register

uint32_t address(PciAddress a, uint8_t offset) {
    return 0x80000000u | uint32_t(a.bus) << 16 | uint32_t(a.dev) << 11 | uint32_t(a.fn) << 8 |
           (offset & 0xfc);
}

}  // namespace

uint32_t pci_read32(PciAddress a, uint8_t offset) {
    SpinGuardIrq g(&pci_lock);
    arch::outl(0xcf8, address(a, offset));
    return arch::inl(0xcfc);
}

void pci_write32(PciAddress a, uint8_t offset, uint32_t value) {
    SpinGuardIrq g(&pci_lock);
    arch::outl(0xcf8, address(a, offset));
    arch::outl(0xcfc, value);
}

bool pci_find(uint16_t vendor, uint16_t device, PciAddress* out) {
    for (uint8_t dev = 0; dev < 32; dev++)
        for (uint8_t fn = 0; fn < 8; fn++) {
            PciAddress a{0, dev, fn};
            uint32_t id = pci_read32(a, 0);
            if ((id & 0xffff) == 0xffff) {
                if (fn == 0) break;  // no device here
                continue;
            }
            if ((id & 0xffff) == vendor && (id >> 16) == device) {
                *out = a;
                return true;
            }
            if (fn == 0 && !(pci_read32(a, 0x0c) & 0x00800000)) break;  // not multi-function
        }
    return false;
}
