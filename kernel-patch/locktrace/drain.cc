// locktrace/drain.cc: see drain.h.
#include "drain.h"

#include "buffer_parser.h"
#include "session.h"

namespace spinlab::locktrace {

namespace {

bool belongs(const BufferView& v, const TraceAreaHeader& h, uint32_t cpu, uint64_t sequence) {
    return v.header.sequence == sequence && v.header.cpu == cpu &&
           v.header.session_id == h.session.session_id;
}

}  // namespace

uint64_t queued_buffers(const void* area, uint32_t cpu) {
    const TraceCpuControl* c = area_control(const_cast<void*>(area), cpu);
    return __atomic_load_n(&c->produced, __ATOMIC_ACQUIRE) -
           __atomic_load_n(&c->consumed, __ATOMIC_RELAXED);
}

TakeResult take_buffer(void* area, const TraceAreaHeader& h, uint32_t cpu, uint8_t* dst,
                       uint32_t* len) {
    TraceCpuControl* c = area_control(area, cpu);
    const uint64_t produced = __atomic_load_n(&c->produced, __ATOMIC_ACQUIRE);
    const uint64_t consumed = __atomic_load_n(&c->consumed, __ATOMIC_RELAXED);  // ours
    if (produced == consumed) return TakeResult::kEmpty;
    const uint32_t n = h.session.buffers_per_cpu;
    const uint8_t* src = area_buffer(area, cpu, uint32_t(consumed % n));
    __builtin_memcpy(dst, src, h.session.buffer_size);
    BufferView v;
    const bool ok = produced - consumed <= n &&
                    parse_buffer(dst, h.session.buffer_size, &v) == BufferError::kNone &&
                    belongs(v, h, cpu, consumed);
    if (!ok)
        __atomic_store_n(&c->realtime_buffers_lost, c->realtime_buffers_lost + 1, __ATOMIC_RELAXED);
    // Release: our copy is complete before the CPU may write into the slot again.
    __atomic_store_n(&c->consumed, consumed + 1, __ATOMIC_RELEASE);
    if (!ok) return TakeResult::kBad;
    *len = v.header.bytes_used;
    return TakeResult::kTaken;
}

uint64_t read_in_place(const void* area, const TraceAreaHeader& h, uint32_t cpu, uint8_t* dst,
                       EmitFn emit, void* arg) {
    const TraceCpuControl* c = area_control(const_cast<void*>(area), cpu);
    const uint32_t n = h.session.buffers_per_cpu;
    const uint64_t produced = __atomic_load_n(&c->produced, __ATOMIC_ACQUIRE);
    uint64_t first = __atomic_load_n(&c->overwritten, __ATOMIC_ACQUIRE);
    const uint64_t consumed = __atomic_load_n(&c->consumed, __ATOMIC_ACQUIRE);
    if (consumed > first) first = consumed;
    if (produced > n && produced - n > first) first = produced - n;
    uint64_t lost = 0;
    for (uint64_t s = first; s < produced; s++) {
        __builtin_memcpy(dst, area_buffer(const_cast<void*>(area), cpu, uint32_t(s % n)),
                         h.session.buffer_size);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        // The CPU takes slot s % n back only after advancing `overwritten` past s.
        BufferView v;
        if (__atomic_load_n(&c->overwritten, __ATOMIC_ACQUIRE) > s ||
            parse_buffer(dst, h.session.buffer_size, &v) != BufferError::kNone ||
            !belongs(v, h, cpu, s)) {
            lost++;
            continue;
        }
        emit(arg, dst, v.header.bytes_used);
    }
    return lost;
}

}  // namespace spinlab::locktrace
