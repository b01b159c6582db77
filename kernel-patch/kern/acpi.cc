// kern/acpi.cc: find the RSDP where the ACPI spec says firmware puts it (the first KiB of the
// EBDA, or 0xE0000-0xFFFFF) and parse the tables through the identity map.
#include "acpi.h"

#include "console.h"

namespace {

acpi::Madt madt;

const uint8_t* identity(uint64_t phys, uint32_t, void*) {
    return reinterpret_cast<const uint8_t*>(phys);
}

}  // namespace

void acpi_init() {
    // The BIOS data area word at 0x40e holds the EBDA's segment. (Launder the address through
    // asm: the compiler treats a constant pointer to page 0 as invalid.)
    uintptr_t bda = 0x40e;
    asm("" : "+r"(bda));
    uint64_t ebda = uint64_t(*reinterpret_cast<volatile uint16_t*>(bda)) << 4;
    const uint8_t* rsdp = nullptr;
    if (ebda >= 0x80000 && ebda < 0xa0000)
        rsdp = acpi::find_rsdp(reinterpret_cast<const uint8_t*>(ebda), 1024);
    if (!rsdp) rsdp = acpi::find_rsdp(reinterpret_cast<const uint8_t*>(0xe0000), 0x20000);
    acpi::Error e = acpi::parse(rsdp, identity, nullptr, &madt);
    if (e != acpi::Error::kOk) panic("acpi: %s", acpi::error_name(e));
    if (madt.skipped_cpus)
        kprintf("acpi: %u CPUs beyond the limit of %u are not started\n", madt.skipped_cpus,
                acpi::kMaxCpus);
}

const acpi::Madt& acpi_madt() { return madt; }
