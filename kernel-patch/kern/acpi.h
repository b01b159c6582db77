// kern/acpi.h: the kernel's view of the ACPI tables (parsed by lib/acpi_tables).
#pragma once
#include "../lib/acpi_tables.h"

void acpi_init();                 // boot CPU: find the RSDP, parse the MADT, or panic
const acpi::Madt& acpi_madt();
