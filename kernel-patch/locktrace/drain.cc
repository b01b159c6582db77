// locktrace/drain.cc: see drain.h. Every address is computed from the checked header copy `h`
// (control_of, buffer_of); every guest counter is loaded once and checked against the cursor.
#include "drain.h"

#include "buffer_parser.h"
#include "trace_session.h"

namespace spinlab::locktrace {

namespace {

// CPU `cpu`'s control block, from the checked copy (area_parse proved every CPU's lies inside).
TraceCpuControl* control_of(const void* area, const TraceAreaHeader& h, uint32_t cpu) {
    return reinterpret_cast<TraceCpuControl*>(const_cast<uint8_t*>(static_cast<const uint8_t*>(area)) +
                                              h.control_offset + uint64_t(h.control_stride) * cpu);
}

// Slot `index` (< buffers_per_cpu) of CPU `cpu`, from the checked copy.
const uint8_t* buffer_of(const void* area, const TraceAreaHeader& h, uint32_t cpu, uint64_t index) {
    return static_cast<const uint8_t*>(area) + h.buffers_offset +
           (uint64_t(cpu) * h.session.buffers_per_cpu + index) * h.session.buffer_size;
}

// The slot of buffer `sequence` of CPU `cpu` (one load of the guest's table entry), or n when the
// entry is out of range.
uint64_t slot_of(const void* area, const TraceAreaHeader& h, uint32_t cpu, uint64_t sequence) {
    const uint32_t n = h.session.buffers_per_cpu;
    const uint32_t* table = reinterpret_cast<const uint32_t*>(static_cast<const uint8_t*>(area) +
                                                              h.slots_offset) + uint64_t(cpu) * n;
    const uint32_t slot = __atomic_load_n(&table[sequence % n], __ATOMIC_RELAXED);
    return slot < n ? slot : n;
}

bool belongs(const BufferView& v, const TraceAreaHeader& h, uint32_t cpu, uint64_t sequence) {
    return v.header.sequence == sequence && v.header.cpu == cpu &&
           v.header.session_id == h.session.session_id;
}

uint64_t load(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

}  // namespace

DrainError cursor_init(const void* area, const TraceAreaHeader& h, uint32_t cpu, DrainCursor* c) {
    if (cpu >= h.session.cpu_count) return DrainError::kBadCpu;
    const TraceCpuControl* k = control_of(area, h, cpu);
    const uint64_t produced = load(&k->produced);
    const uint64_t consumed = load(&k->consumed);
    const uint64_t overwritten = load(&k->overwritten);
    if (consumed > produced) return DrainError::kConsumedAhead;
    if (overwritten > produced) return DrainError::kOverwrittenAhead;
    if (h.session.logger_mode != uint32_t(TraceLoggerMode::kCircular) &&
        produced - consumed > h.session.buffers_per_cpu)
        return DrainError::kProducedAhead;
    c->consumed = consumed;
    c->produced = produced;
    c->overwritten = overwritten;
    return DrainError::kNone;
}

TakeResult take_buffer(void* area, const TraceAreaHeader& h, uint32_t cpu, DrainCursor* c,
                       uint8_t* dst, uint32_t* len, DrainError* err) {
    auto corrupt = [&](DrainError e) {
        *err = e;
        return TakeResult::kCorrupt;
    };
    if (cpu >= h.session.cpu_count) return corrupt(DrainError::kBadCpu);
    TraceCpuControl* k = control_of(area, h, cpu);
    const uint32_t n = h.session.buffers_per_cpu;
    const uint64_t produced = load(&k->produced);  // the one read of this guest word
    if (produced < c->produced) return corrupt(DrainError::kProducedBackwards);
    // The CPU writes buffer `produced` only while produced - consumed < n (it never passes the
    // host), so more than n queued is a broken counter, not a slow drain.
    if (produced - c->consumed > n) return corrupt(DrainError::kProducedAhead);
    c->produced = produced;
    if (produced == c->consumed) return TakeResult::kEmpty;
    const uint64_t slot = slot_of(area, h, cpu, c->consumed);  // published before produced
    if (slot == n) return corrupt(DrainError::kSlotOutOfRange);
    __builtin_memcpy(dst, buffer_of(area, h, cpu, slot), h.session.buffer_size);
    BufferView v;
    const bool ok = parse_buffer(dst, h.session.buffer_size, &v) == BufferError::kNone &&
                    belongs(v, h, cpu, c->consumed);
    if (!ok) count_realtime_lost(area, h, cpu, 1);
    // Release: our copy is complete before the CPU may write into the slot again. The value
    // stored is the host's own count, whatever the area's copy holds now.
    c->consumed++;
    __atomic_store_n(&k->consumed, c->consumed, __ATOMIC_RELEASE);
    if (!ok) return TakeResult::kBad;
    *len = v.header.bytes_used;  // parse_buffer: <= buffer_size
    return TakeResult::kTaken;
}

TakeResult take_buffer(void* area, const TraceAreaHeader& h, uint32_t cpu, uint8_t* dst,
                       uint32_t* len) {
    DrainCursor c;
    DrainError e = cursor_init(area, h, cpu, &c);
    if (e != DrainError::kNone) return TakeResult::kCorrupt;
    return take_buffer(area, h, cpu, &c, dst, len, &e);
}

uint64_t read_in_place(const void* area, const TraceAreaHeader& h, uint32_t cpu, DrainCursor* c,
                       uint8_t* dst, EmitFn emit, void* arg, DrainError* err) {
    *err = DrainError::kNone;
    if (cpu >= h.session.cpu_count) {
        *err = DrainError::kBadCpu;
        return 0;
    }
    const TraceCpuControl* k = control_of(area, h, cpu);
    const uint32_t n = h.session.buffers_per_cpu;
    const uint64_t produced = load(&k->produced);
    const uint64_t overwritten = load(&k->overwritten);
    if (produced < c->produced) *err = DrainError::kProducedBackwards;
    else if (overwritten < c->overwritten) *err = DrainError::kOverwrittenBackwards;
    else if (overwritten > produced) *err = DrainError::kOverwrittenAhead;
    if (*err != DrainError::kNone) return 0;
    c->produced = produced;
    c->overwritten = overwritten;
    // The oldest buffer still published: at most n before produced, so the loop runs <= n times.
    uint64_t first = overwritten > c->consumed ? overwritten : c->consumed;
    if (produced > n && produced - n > first) first = produced - n;
    uint64_t lost = 0;
    for (uint64_t s = first; s < produced; s++) {
        // The entry may already name the slot of a newer buffer (s overwritten): the check
        // after the copy drops it then.
        const uint64_t slot = slot_of(area, h, cpu, s);
        if (slot == n) {
            lost++;
            continue;
        }
        __builtin_memcpy(dst, buffer_of(area, h, cpu, slot), h.session.buffer_size);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        // The CPU takes the slot of s back only after advancing `overwritten` past s. This
        // second read only decides whether the copy is kept; it is never an index.
        BufferView v;
        if (load(&k->overwritten) > s ||
            parse_buffer(dst, h.session.buffer_size, &v) != BufferError::kNone ||
            !belongs(v, h, cpu, s)) {
            lost++;
            continue;
        }
        emit(arg, dst, v.header.bytes_used);
    }
    return lost;
}

uint64_t read_in_place(const void* area, const TraceAreaHeader& h, uint32_t cpu, uint8_t* dst,
                       EmitFn emit, void* arg) {
    DrainCursor c;
    if (cursor_init(area, h, cpu, &c) != DrainError::kNone) return 0;
    DrainError e;
    return read_in_place(area, h, cpu, &c, dst, emit, arg, &e);
}

void count_realtime_lost(void* area, const TraceAreaHeader& h, uint32_t cpu, uint64_t n) {
    if (cpu >= h.session.cpu_count || n == 0) return;
    TraceCpuControl* k = control_of(area, h, cpu);
    __atomic_store_n(&k->realtime_buffers_lost,
                     __atomic_load_n(&k->realtime_buffers_lost, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

uint32_t cpu_buffers_allocated(const void* area, const TraceAreaHeader& h, uint32_t cpu) {
    if (cpu >= h.session.cpu_count) return 0;
    const uint64_t a = __atomic_load_n(&control_of(area, h, cpu)->buffers_allocated, __ATOMIC_RELAXED);
    return a < h.session.buffers_per_cpu ? uint32_t(a) : h.session.buffers_per_cpu;
}

TraceLossCounters cpu_loss_counters(const void* area, const TraceAreaHeader& h, uint32_t cpu) {
    TraceLossCounters t;
    __builtin_memset(&t, 0, sizeof t);
    if (cpu >= h.session.cpu_count) return t;
    const TraceCpuControl* k = control_of(area, h, cpu);
    t.events_attempted = __atomic_load_n(&k->events_attempted, __ATOMIC_RELAXED);
    t.events_written = __atomic_load_n(&k->events_written, __ATOMIC_RELAXED);
    t.events_lost = __atomic_load_n(&k->events_lost, __ATOMIC_RELAXED);
    t.buffers_written = __atomic_load_n(&k->buffers_written, __ATOMIC_RELAXED);
    t.log_buffers_lost = __atomic_load_n(&k->log_buffers_lost, __ATOMIC_RELAXED);
    t.realtime_buffers_lost = __atomic_load_n(&k->realtime_buffers_lost, __ATOMIC_RELAXED);
    return t;
}

TraceLossCounters area_totals(const void* area, const TraceAreaHeader& h) {
    TraceLossCounters t;
    __builtin_memset(&t, 0, sizeof t);
    for (uint32_t c = 0; c < h.session.cpu_count; c++) {
        add_loss(t, cpu_loss_counters(area, h, c));
    }
    return t;
}

}  // namespace spinlab::locktrace
