// channel/crc32c.h: CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of the
// channel's frames and of the trace file's frames. Freestanding: compiled into the kernel and
// into the host tools.
//
// Two implementations that give the same value for every input: SSE4.2's `crc32` instruction,
// 8 bytes at a time (it uses only general registers, so the kernel's -mgeneral-regs-only build
// runs it too), chosen at run time when CPUID.1:ECX.SSE4_2 says the CPU has it; and a table,
// one lookup per byte, everywhere else. crc32c_update picks one on its first call.
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace spinlab {

// Continues a CRC: pass 0 to start; crc32c_update(crc32c_update(0, a), b) == crc32c(a ++ b).
uint32_t crc32c_update(uint32_t crc, const void* data, size_t len);

inline uint32_t crc32c(const void* data, size_t len) { return crc32c_update(0, data, len); }

// The two implementations, for tests and benchmarks. crc32c_update_hw may be called only where
// crc32c_hw_available() is true (an x86-64 CPU with SSE4.2).
uint32_t crc32c_update_table(uint32_t crc, const void* data, size_t len);
uint32_t crc32c_update_hw(uint32_t crc, const void* data, size_t len);
bool crc32c_hw_available();
// Which one crc32c_update runs: "sse4.2" or "table".
const char* crc32c_implementation();
// For benchmarks: make crc32c_update run the table (true) or choose again by CPUID (false).
void crc32c_force_table(bool table);

}  // namespace spinlab
