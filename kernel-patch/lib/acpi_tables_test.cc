// Tests of the MADT walk on table bytes built here: a fake "physical memory" vector, tables at
// known offsets, checksums computed like firmware does.
#include "lib/acpi_tables.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

struct Mem {
    std::vector<uint8_t> bytes = std::vector<uint8_t>(0x4000);
};

const uint8_t* map(uint64_t phys, uint32_t len, void* ctx) {
    auto* m = static_cast<Mem*>(ctx);
    if (phys + len > m->bytes.size()) return nullptr;
    return m->bytes.data() + phys;
}

void put32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
void put64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }
void fix_checksum(uint8_t* p, size_t len, size_t at) {
    p[at] = 0;
    uint8_t s = 0;
    for (size_t i = 0; i < len; i++) s = uint8_t(s + p[i]);
    p[at] = uint8_t(-s);
}

std::vector<uint8_t> header(const char* sig, uint32_t len) {
    std::vector<uint8_t> t(len);
    std::memcpy(t.data(), sig, 4);
    put32(&t[4], len);
    t[8] = 1;
    return t;
}

void place(Mem& m, uint64_t at, std::vector<uint8_t> t) {
    fix_checksum(t.data(), t.size(), 9);
    std::memcpy(&m.bytes[at], t.data(), t.size());
}

// MADT with: lapic 0 enabled, lapic 1 enabled, lapic 2 disabled, an I/O APIC, an override
// of IRQ 0 -> GSI 2 and of IRQ 4 -> GSI 20 active-low level, an x2APIC entry enabled.
std::vector<uint8_t> madt() {
    std::vector<uint8_t> e = {
        0, 8, 0, 0, 1, 0, 0, 0,   // lapic uid 0, id 0, enabled
        0, 8, 1, 1, 1, 0, 0, 0,   // lapic uid 1, id 1, enabled
        0, 8, 2, 7, 0, 0, 0, 0,   // lapic id 7 disabled
        1, 12, 0, 0, 0, 0, 0xc0, 0xfe, 0, 0, 0, 0,  // ioapic at 0xfec00000, gsi base 0
        2, 10, 0, 0, 2, 0, 0, 0, 0, 0,              // irq 0 -> gsi 2
        2, 10, 0, 4, 20, 0, 0, 0, 0x0f, 0,          // irq 4 -> gsi 20, flags 0xf
        9, 16, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0,  // x2apic id 9 enabled
    };
    auto t = header("APIC", uint32_t(44 + e.size()));
    put32(&t[36], 0xfee00000);
    std::memcpy(&t[44], e.data(), e.size());
    return t;
}

void build_rsdt(Mem& m) {
    auto rsdp = std::vector<uint8_t>(20);
    std::memcpy(rsdp.data(), "RSD PTR ", 8);
    put32(&rsdp[16], 0x1000);
    fix_checksum(rsdp.data(), 20, 8);
    std::memcpy(&m.bytes[0x100], rsdp.data(), 20);
    auto rsdt = header("RSDT", 36 + 8);
    put32(&rsdt[36], 0x2000);  // a FACP first: must be skipped
    put32(&rsdt[40], 0x3000);
    place(m, 0x1000, rsdt);
    place(m, 0x2000, header("FACP", 116));
    place(m, 0x3000, madt());
}

TEST(Acpi, FindsRsdpOnlyOn16ByteBoundaryWithValidChecksum) {
    Mem m;
    build_rsdt(m);
    EXPECT_EQ(acpi::find_rsdp(m.bytes.data(), 0x1000), m.bytes.data() + 0x100);
    m.bytes[0x100 + 9] ^= 1;  // break the checksum
    EXPECT_EQ(acpi::find_rsdp(m.bytes.data(), 0x1000), nullptr);
}

TEST(Acpi, ParsesMadtThroughRsdt) {
    Mem m;
    build_rsdt(m);
    acpi::Madt out;
    ASSERT_EQ(acpi::parse(m.bytes.data() + 0x100, map, &m, &out), acpi::Error::kOk);
    ASSERT_EQ(out.ncpus, 3u);  // 0, 1 and the x2APIC 9; the disabled 7 is not listed
    EXPECT_EQ(out.apic_ids[0], 0u);
    EXPECT_EQ(out.apic_ids[1], 1u);
    EXPECT_EQ(out.apic_ids[2], 9u);
    EXPECT_EQ(out.lapic_addr, 0xfee00000u);
    EXPECT_EQ(out.ioapic_addr, 0xfec00000u);
    auto com1 = acpi::isa_irq_route(out, 4);
    EXPECT_EQ(com1.gsi, 20u);
    EXPECT_EQ(com1.flags, 0x0f);
    EXPECT_EQ(acpi::isa_irq_route(out, 3).gsi, 3u);  // no override: identity
}

TEST(Acpi, PrefersXsdtOnRevision2) {
    Mem m;
    build_rsdt(m);
    auto rsdp = std::vector<uint8_t>(36);
    std::memcpy(rsdp.data(), "RSD PTR ", 8);
    rsdp[15] = 2;
    put32(&rsdp[16], 0x1000);
    put64(&rsdp[24], 0x2800);
    fix_checksum(rsdp.data(), 20, 8);
    std::memcpy(&m.bytes[0x200], rsdp.data(), 36);
    auto xsdt = header("XSDT", 36 + 8);
    put64(&xsdt[36], 0x3000);
    place(m, 0x2800, xsdt);
    acpi::Madt out;
    ASSERT_EQ(acpi::parse(m.bytes.data() + 0x200, map, &m, &out), acpi::Error::kOk);
    EXPECT_EQ(out.ncpus, 3u);
}

TEST(Acpi, ReportsEachKindOfDamage) {
    acpi::Madt out;
    EXPECT_EQ(acpi::parse(nullptr, map, nullptr, &out), acpi::Error::kNoRsdp);
    {
        Mem m;
        build_rsdt(m);
        m.bytes[0x1000 + 20] ^= 0x55;  // RSDT body
        EXPECT_EQ(acpi::parse(m.bytes.data() + 0x100, map, &m, &out), acpi::Error::kBadRootChecksum);
    }
    {
        Mem m;
        build_rsdt(m);
        m.bytes[0x3000 + 50] ^= 0x55;  // MADT body
        EXPECT_EQ(acpi::parse(m.bytes.data() + 0x100, map, &m, &out), acpi::Error::kBadMadtChecksum);
    }
    {
        Mem m;
        build_rsdt(m);
        auto rsdt = header("RSDT", 36 + 4);
        put32(&rsdt[36], 0x2000);  // only the FACP
        place(m, 0x1000, rsdt);
        EXPECT_EQ(acpi::parse(m.bytes.data() + 0x100, map, &m, &out), acpi::Error::kNoMadt);
    }
    {
        Mem m;
        build_rsdt(m);
        auto t = madt();
        t[44 + 1] = 40;  // first entry claims to run past the table
        place(m, 0x3000, t);
        EXPECT_EQ(acpi::parse(m.bytes.data() + 0x100, map, &m, &out), acpi::Error::kBadMadtEntry);
    }
    {
        Mem m;
        build_rsdt(m);
        auto t = header("APIC", 44 + 8);
        std::vector<uint8_t> e = {0, 8, 0, 0, 0, 0, 0, 0};  // one disabled CPU only
        std::memcpy(&t[44], e.data(), e.size());
        place(m, 0x3000, t);
        EXPECT_EQ(acpi::parse(m.bytes.data() + 0x100, map, &m, &out), acpi::Error::kNoCpus);
    }
}

TEST(Acpi, ErrorNamesAreSentences) {
    EXPECT_EQ(std::string(acpi::error_name(acpi::Error::kNoMadt)), "no MADT (APIC) table");
}

}  // namespace
