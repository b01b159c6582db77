// channel/crc32c.cc: CRC-32C by SSE4.2's crc32 instruction where the CPU has it, else by a
// table (one lookup per byte). See crc32c.h.
#include "crc32c.h"

namespace spinlab {
namespace {

struct Crc32cTable {
    uint32_t entry[256];
};

// Built at compile time: the kernel has no static constructors, and a constexpr table is
// constant-initialised into .rodata.
constexpr Crc32cTable make_table() {
    Crc32cTable t{};
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int bit = 0; bit < 8; ++bit) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        t.entry[i] = c;
    }
    return t;
}

constexpr Crc32cTable kTable = make_table();
static_assert(kTable.entry[1] == 0xF26B8303u, "CRC-32C table must match the Castagnoli polynomial");

// Which implementation crc32c_update runs: 0 not chosen yet, 1 table, 2 sse4.2. Chosen on the
// first call (the kernel has no static constructors); CPUs racing to choose store the same value.
int g_choice = 0;

int choose() {
    int c = __atomic_load_n(&g_choice, __ATOMIC_RELAXED);
    if (c == 0) {
        c = crc32c_hw_available() ? 2 : 1;
        __atomic_store_n(&g_choice, c, __ATOMIC_RELAXED);
    }
    return c;
}

}  // namespace

uint32_t crc32c_update_table(uint32_t crc, const void* data, size_t len) {
    const uint8_t* p = static_cast<const uint8_t*>(data);
    crc = ~crc;
    for (size_t i = 0; i < len; ++i) crc = kTable.entry[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

#if defined(__x86_64__)

bool crc32c_hw_available() {
#if __STDC_HOSTED__ == 0
    // The guest kernel keeps the table: on the build machines' nested KVM (kvm_pvm) guest ring 0
    // runs through KVM's instruction emulator, and with the crc32 instruction there the KVM
    // ground-truth runs' control channel stopped answering (clean-clone make test, 2026-11-28).
    // Both paths give the same value, so the host's SSE4.2 checks the guest's table CRCs.
    return false;
#endif
    uint32_t eax = 1, ebx, ecx = 0, edx;
    __asm__ volatile("cpuid" : "+a"(eax), "=b"(ebx), "+c"(ecx), "=d"(edx));
    return (ecx >> 20) & 1;  // CPUID.1:ECX.SSE4_2
}

// The crc32 instruction (SSE4.2) by inline assembly: it reads and writes general registers only,
// so no target attribute or vector register is needed (the kernel is -mgeneral-regs-only).
uint32_t crc32c_update_hw(uint32_t crc, const void* data, size_t len) {
    const uint8_t* p = static_cast<const uint8_t*>(data);
    uint64_t c = ~crc;
    // Bytes up to an 8-byte boundary, then 8 at a time, then the tail.
    while (len > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
        uint32_t c32 = uint32_t(c);
        __asm__("crc32b %1, %0" : "+r"(c32) : "rm"(*p));
        c = c32;
        p++;
        len--;
    }
    while (len >= 8) {
        uint64_t v;
        __builtin_memcpy(&v, p, 8);
        __asm__("crc32q %1, %0" : "+r"(c) : "rm"(v));
        p += 8;
        len -= 8;
    }
    uint32_t c32 = uint32_t(c);
    while (len > 0) {
        __asm__("crc32b %1, %0" : "+r"(c32) : "rm"(*p));
        p++;
        len--;
    }
    return ~c32;
}

#else

bool crc32c_hw_available() { return false; }
uint32_t crc32c_update_hw(uint32_t crc, const void* data, size_t len) {
    return crc32c_update_table(crc, data, len);
}

#endif

uint32_t crc32c_update(uint32_t crc, const void* data, size_t len) {
    return choose() == 2 ? crc32c_update_hw(crc, data, len) : crc32c_update_table(crc, data, len);
}

const char* crc32c_implementation() { return choose() == 2 ? "sse4.2" : "table"; }

void crc32c_force_table(bool table) { __atomic_store_n(&g_choice, table ? 1 : 0, __ATOMIC_RELAXED); }

}  // namespace spinlab
