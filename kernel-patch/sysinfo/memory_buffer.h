// sysinfo/memory_buffer.h: a sysinfo::Buffer over memory the handler may touch directly:
// a host channel frame already copied into the kernel, a kernel caller's own buffer, tests.
// The system call path uses its own Buffer whose copies validate user pointers instead.
#pragma once

#include <stdint.h>

#include "sysinfo_handler.h"

namespace spinlab::sysinfo {

struct MemoryBufferState {
    uint8_t* data;
    uint32_t length;
};

// Copies outside [0, length) fail, as a bad user range would.
bool memory_copy_in(void* ctx, uint32_t offset, void* dst, uint32_t n);
bool memory_copy_out(void* ctx, uint32_t offset, const void* src, uint32_t n);

// `state` must outlive the Buffer.
inline Buffer memory_buffer(MemoryBufferState& state) {
    return Buffer{state.length, &state, memory_copy_in, memory_copy_out};
}

}  // namespace spinlab::sysinfo
