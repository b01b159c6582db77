// kern/pci.h: PCI configuration space through the legacy 0xcf8/0xcfc ports (bus 0 is enough
// for the devices QEMU gives this kernel).
#pragma once
#include <stdint.h>

struct PciAddress {
    uint8_t bus, dev, fn;
};

uint32_t pci_read32(PciAddress a, uint8_t offset);
void pci_write32(PciAddress a, uint8_t offset, uint32_t value);
// Finds the first function with this vendor and device id on bus 0.
bool pci_find(uint16_t vendor, uint16_t device, PciAddress* out);
