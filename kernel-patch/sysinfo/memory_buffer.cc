// sysinfo/memory_buffer.cc: see memory_buffer.h.
#include "memory_buffer.h"

namespace spinlab::sysinfo {

namespace {
bool in_range(const MemoryBufferState& s, uint32_t offset, uint32_t n) {
    return offset <= s.length && n <= s.length - offset;
}
}  // namespace

bool memory_copy_in(void* ctx, uint32_t offset, void* dst, uint32_t n) {
    auto* s = static_cast<MemoryBufferState*>(ctx);
    if (!in_range(*s, offset, n)) return false;
    __builtin_memcpy(dst, s->data + offset, n);
    return true;
}

bool memory_copy_out(void* ctx, uint32_t offset, const void* src, uint32_t n) {
    auto* s = static_cast<MemoryBufferState*>(ctx);
    if (!in_range(*s, offset, n)) return false;
    __builtin_memcpy(s->data + offset, src, n);
    return true;
}

}  // namespace spinlab::sysinfo
