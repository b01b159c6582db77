// lib/acpi_tables.cc: see acpi_tables.h. Layouts from the ACPI specification (RSDP 5.2.5,
// RSDT/XSDT 5.2.7-8, MADT 5.2.12). All reads are byte-wise: tables need not be aligned.
#include "acpi_tables.h"

namespace acpi {
namespace {

uint32_t le32(const uint8_t* p) { return p[0] | p[1] << 8 | p[2] << 16 | uint32_t(p[3]) << 24; }
uint64_t le64(const uint8_t* p) { return le32(p) | uint64_t(le32(p + 4)) << 32; }
uint16_t le16(const uint8_t* p) { return uint16_t(p[0] | p[1] << 8); }
bool sig(const uint8_t* p, const char* s) {
    for (int i = 0; i < 4; i++)
        if (p[i] != uint8_t(s[i])) return false;
    return true;
}

constexpr uint32_t kHeaderLen = 36;   // the common System Description Table header

// Maps a table: first its header to learn the length, then the whole table.
const uint8_t* map_table(uint64_t phys, PhysMap map, void* ctx, uint32_t* len) {
    const uint8_t* h = map(phys, kHeaderLen, ctx);
    if (!h) return nullptr;
    *len = le32(h + 4);
    if (*len < kHeaderLen) return nullptr;
    return map(phys, *len, ctx);
}

Error parse_madt(const uint8_t* t, uint32_t len, Madt* out) {
    out->lapic_addr = le32(t + 36);
    for (uint32_t off = 44; off < len;) {
        if (off + 2 > len) return Error::kBadMadtEntry;
        uint8_t type = t[off], elen = t[off + 1];
        if (elen < 2 || off + elen > len) return Error::kBadMadtEntry;
        const uint8_t* e = t + off;
        switch (type) {
        case 0:  // processor local APIC: uid, apic id, flags (bit 0 enabled, bit 1 online-capable)
            if (elen < 8) return Error::kBadMadtEntry;
            if (le32(e + 4) & 1) {
                if (out->ncpus < kMaxCpus) out->apic_ids[out->ncpus++] = e[3];
                else out->skipped_cpus++;
            }
            break;
        case 1:  // I/O APIC: id, reserved, address, GSI base
            if (elen < 12) return Error::kBadMadtEntry;
            if (!out->ioapic_addr) {
                out->ioapic_addr = le32(e + 4);
                out->ioapic_gsi_base = le32(e + 8);
            }
            break;
        case 2:  // interrupt source override: bus, source irq, gsi, flags
            if (elen < 10) return Error::kBadMadtEntry;
            if (out->noverrides < kMaxOverrides)
                out->overrides[out->noverrides++] = {e[3], le32(e + 4), le16(e + 8)};
            break;
        case 5:  // local APIC address override (64-bit)
            if (elen < 12) return Error::kBadMadtEntry;
            out->lapic_addr = le64(e + 4);
            break;
        case 9:  // processor local x2APIC: reserved(2), x2apic id, flags, uid
            if (elen < 16) return Error::kBadMadtEntry;
            if (le32(e + 8) & 1) {
                if (out->ncpus < kMaxCpus) out->apic_ids[out->ncpus++] = le32(e + 4);
                else out->skipped_cpus++;
            }
            break;
        default:
            break;  // other entry types do not concern us
        }
        off += elen;
    }
    return out->ncpus ? Error::kOk : Error::kNoCpus;
}

}  // namespace

bool checksum_ok(const uint8_t* p, size_t len) {
    uint8_t sum = 0;
    for (size_t i = 0; i < len; i++) sum = uint8_t(sum + p[i]);
    return sum == 0;
}

const char* error_name(Error e) {
    switch (e) {
    case Error::kOk: return "ok";
    case Error::kNoRsdp: return "no RSDP found";
    case Error::kBadRsdpChecksum: return "RSDP checksum wrong";
    case Error::kBadRootChecksum: return "RSDT/XSDT checksum wrong";
    case Error::kBadRootSignature: return "RSDT/XSDT signature wrong";
    case Error::kNoMadt: return "no MADT (APIC) table";
    case Error::kBadMadtChecksum: return "MADT checksum wrong";
    case Error::kBadMadtEntry: return "MADT entry truncated or malformed";
    case Error::kNoCpus: return "MADT lists no enabled CPU";
    }
    return "?";
}

const uint8_t* find_rsdp(const uint8_t* area, size_t len) {
    for (size_t off = 0; off + 20 <= len; off += 16) {
        const uint8_t* p = area + off;
        if (sig(p, "RSD ") && sig(p + 4, "PTR ") && checksum_ok(p, 20)) return p;
    }
    return nullptr;
}

Error parse(const uint8_t* rsdp, PhysMap map, void* ctx, Madt* out) {
    *out = Madt{};
    if (!rsdp) return Error::kNoRsdp;
    if (!checksum_ok(rsdp, 20)) return Error::kBadRsdpChecksum;
    bool xsdt = rsdp[15] >= 2 && le64(rsdp + 24) != 0;
    uint64_t root_phys = xsdt ? le64(rsdp + 24) : le32(rsdp + 16);
    uint32_t root_len = 0;
    const uint8_t* root = map_table(root_phys, map, ctx, &root_len);
    if (!root) return Error::kBadRootSignature;
    if (!sig(root, xsdt ? "XSDT" : "RSDT")) return Error::kBadRootSignature;
    if (!checksum_ok(root, root_len)) return Error::kBadRootChecksum;
    uint32_t esize = xsdt ? 8 : 4;
    for (uint32_t off = kHeaderLen; off + esize <= root_len; off += esize) {
        uint64_t phys = xsdt ? le64(root + off) : le32(root + off);
        const uint8_t* h = map(phys, kHeaderLen, ctx);
        if (!h || !sig(h, "APIC")) continue;
        uint32_t len = 0;
        const uint8_t* t = map_table(phys, map, ctx, &len);
        if (!t || len < 44) return Error::kBadMadtEntry;
        if (!checksum_ok(t, len)) return Error::kBadMadtChecksum;
        return parse_madt(t, len, out);
    }
    return Error::kNoMadt;
}

IrqOverride isa_irq_route(const Madt& m, uint8_t irq) {
    for (uint32_t i = 0; i < m.noverrides; i++)
        if (m.overrides[i].isa_irq == irq) return m.overrides[i];
    return {irq, irq, 0};
}

}  // namespace acpi
