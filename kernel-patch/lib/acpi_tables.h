// lib/acpi_tables.h: find the CPUs and the I/O APIC in the ACPI tables (RSDP -> RSDT/XSDT ->
// MADT). Pure: table memory is reached through a mapping callback, so the host tests feed it
// table bytes and the kernel its identity map.
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace acpi {

constexpr uint32_t kMaxCpus = 64;
constexpr uint32_t kMaxOverrides = 16;

struct IrqOverride {
    uint8_t isa_irq;     // the legacy IRQ number (e.g. 4 for COM1)
    uint32_t gsi;        // the I/O APIC input it is wired to
    uint16_t flags;      // MPS INTI flags: polarity bits 0-1, trigger bits 2-3
};

struct Madt {
    uint32_t ncpus;                 // enabled local APICs, in table order
    uint32_t apic_ids[kMaxCpus];
    uint32_t skipped_cpus;          // enabled CPUs beyond kMaxCpus (reported, not started)
    uint64_t lapic_addr;
    uint64_t ioapic_addr;           // first I/O APIC (0 if none)
    uint32_t ioapic_gsi_base;
    uint32_t noverrides;
    IrqOverride overrides[kMaxOverrides];
};

enum class Error {
    kOk, kNoRsdp, kBadRsdpChecksum, kBadRootChecksum, kBadRootSignature, kNoMadt,
    kBadMadtChecksum, kBadMadtEntry, kNoCpus,
};
const char* error_name(Error e);

// Returns a pointer into area at a valid "RSD PTR " structure (16-byte aligned, checksum ok),
// or nullptr.
const uint8_t* find_rsdp(const uint8_t* area, size_t len);

using PhysMap = const uint8_t* (*)(uint64_t phys, uint32_t len, void* ctx);
Error parse(const uint8_t* rsdp, PhysMap map, void* ctx, Madt* out);

// The GSI and flags an ISA IRQ is wired to (identity unless the MADT overrides it).
IrqOverride isa_irq_route(const Madt& m, uint8_t irq);

bool checksum_ok(const uint8_t* p, size_t len);

}  // namespace acpi
