// channel/crc32c.h: CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of the
// channel's frames. Freestanding: compiled into the kernel and into the host tools.
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace spinlab {

// Continues a CRC: pass 0 to start; crc32c_update(crc32c_update(0, a), b) == crc32c(a ++ b).
uint32_t crc32c_update(uint32_t crc, const void* data, size_t len);

inline uint32_t crc32c(const void* data, size_t len) { return crc32c_update(0, data, len); }

}  // namespace spinlab
