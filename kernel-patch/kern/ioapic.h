// kern/ioapic.h: the I/O APIC routes device interrupts (here: COM1) to a CPU's vector.
#pragma once
#include <stdint.h>

void ioapic_init();   // boot CPU, after acpi_init: mask every input, mask the legacy PIC
void ioapic_route_isa(uint8_t isa_irq, uint8_t vector, uint32_t dest_apic_id);
