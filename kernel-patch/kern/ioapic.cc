// kern/ioapic.cc: see ioapic.h. Registers through IOREGSEL (offset 0) / IOWIN (offset 0x10).
#include "ioapic.h"

#include "../arch/x86.h"
#include "acpi.h"
#include "console.h"

namespace {

volatile uint32_t* ioapic;

uint32_t rd(uint32_t reg) {
    ioapic[0] = reg;
    return ioapic[4];
}
void wr(uint32_t reg, uint32_t v) {
    ioapic[0] = reg;
    ioapic[4] = v;
}

void pic_mask_all() {
    // Remap the 8259s away from the exception vectors, then mask every line: spurious legacy
    // interrupts would otherwise arrive as vectors 8-15.
    arch::outb(0x20, 0x11); arch::outb(0xa0, 0x11);
    arch::outb(0x21, 0x20); arch::outb(0xa1, 0x28);
    arch::outb(0x21, 0x04); arch::outb(0xa1, 0x02);
    arch::outb(0x21, 0x01); arch::outb(0xa1, 0x01);
    arch::outb(0x21, 0xff); arch::outb(0xa1, 0xff);
}

}  // namespace

void ioapic_init() {
    pic_mask_all();
    const acpi::Madt& m = acpi_madt();
    if (!m.ioapic_addr) panic("ioapic: the MADT lists no I/O APIC");
    ioapic = reinterpret_cast<volatile uint32_t*>(m.ioapic_addr);
    uint32_t n = ((rd(1) >> 16) & 0xff) + 1;
    for (uint32_t i = 0; i < n; i++) {
        wr(0x10 + 2 * i, 1u << 16);  // masked
        wr(0x11 + 2 * i, 0);
    }
}

void ioapic_route_isa(uint8_t isa_irq, uint8_t vector, uint32_t dest_apic_id) {
    acpi::IrqOverride r = acpi::isa_irq_route(acpi_madt(), isa_irq);
    uint32_t pin = r.gsi - acpi_madt().ioapic_gsi_base;
    uint32_t lo = vector;
    if ((r.flags & 3) == 3) lo |= 1u << 13;         // active low
    if (((r.flags >> 2) & 3) == 3) lo |= 1u << 15;  // level triggered
    wr(0x11 + 2 * pin, dest_apic_id << 24);
    wr(0x10 + 2 * pin, lo);                         // unmasked, fixed, physical
}
