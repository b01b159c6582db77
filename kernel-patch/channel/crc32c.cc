// channel/crc32c.cc: table-driven CRC-32C, one table lookup per byte.
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

}  // namespace

uint32_t crc32c_update(uint32_t crc, const void* data, size_t len) {
    const uint8_t* p = static_cast<const uint8_t*>(data);
    crc = ~crc;
    for (size_t i = 0; i < len; ++i) crc = kTable.entry[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

}  // namespace spinlab
