// kern/region.cc: see region.h.
#include "region.h"

#include "../arch/x86.h"
#include "channel/clock_area.h"
#include "channel/region_header.h"
#include "console.h"
#include "hpet.h"
#include "ivshmem.h"
#include "lapic.h"
#include "lockstat.h"

namespace {

uint8_t* base;   // set once at boot, before other CPUs start
uint64_t size;
spinlab::RegionLayout layout;

template <class T>
T* section(spinlab::RegionSection s) {
    return reinterpret_cast<T*>(base + layout.section(s).offset);
}

}  // namespace

void region_init(uint32_t cpu_count) {
    uint64_t b, sz;
    if (!ivshmem_init(&b, &sz)) return;
    spinlab::RegionError e = spinlab::region_layout(reinterpret_cast<void*>(b), sz, cpu_count,
                                                    g_tsc_hz, arch::rdtsc_lfence());
    if (e == spinlab::RegionError::kNone)
        e = spinlab::region_parse(reinterpret_cast<void*>(b), sz, &layout);
    if (e != spinlab::RegionError::kNone) {
        kprintf("region: ivshmem at 0x%lx (%lu MiB) unusable for %u CPUs: %s\n", b, sz >> 20,
                cpu_count, spinlab::region_error_name(e));
        return;
    }
    base = reinterpret_cast<uint8_t*>(b);
    size = sz;
    kprintf("region: ivshmem at 0x%lx, %lu MiB, %u CPUs, generation %lu\n", b, sz >> 20,
            cpu_count, layout.generation);
}

bool region_present() { return base != nullptr; }

void* region_perfdata(uint64_t* stride, uint32_t* count) {
    if (!base) return nullptr;
    const auto& s = layout.section(spinlab::RegionSection::kPerfData);
    *stride = s.stride;
    *count = s.count;
    return base + s.offset;
}

spinlab::ChannelServerStats* region_channel_stats() {
    return base ? section<spinlab::ChannelServerStats>(spinlab::RegionSection::kChannelStats) : nullptr;
}

namespace {

// TSC, HPET, TSC: the reference lies between the two TSC reads, and the host places it no
// closer than they are apart. Under TCG the HPET read waits for QEMU's global lock (measured:
// 3 us at the median, 9 us at the 90th percentile), so a read wider than 2 us is tried again,
// up to kRefTries times. The last try is the one published, so that its second TSC read stays
// the last thing before the publication (the host's bracket assumes so). Returns that TSC.
constexpr int kRefTries = 4;

uint64_t read_reference(uint64_t tsc, spinlab::ClockRef* ref) {
    const uint64_t good = g_tsc_hz / 500'000;  // 2 us
    for (int i = 0; i < kRefTries; ++i) {
        if (i) tsc = arch::rdtsc_lfence();
        arch::lfence();
        uint64_t ticks = hpet_read();
        uint64_t after = arch::rdtsc_lfence();
        *ref = {ticks, tsc, hpet_period_fs(), spinlab::ClockReference::kHpet};
        tsc = after;
        if (after - ref->guest_tsc <= good) break;
    }
    return tsc;
}

}  // namespace

void region_clock_tick(uint32_t cpu) {
    if (!base) return;
    auto* area = section<spinlab::ClockArea>(spinlab::RegionSection::kClock);
    // Every CPU ticks; about one per period publishes: the first whose tick comes at least half
    // a period after the last publication.
    const uint64_t min_gap = g_tsc_hz / g_timer_hz / 2;
    uint64_t tsc = arch::rdtsc_lfence();
    if (!spinlab::clock_due(area, tsc, min_gap)) return;
    spinlab::ClockRef ref;
    if (hpet_present()) tsc = read_reference(tsc, &ref);
    spinlab::clock_publish(area, tsc, cpu, 1000000 / g_timer_hz, min_gap, ref);
}

void region_use_for_lockstat() {
    uint64_t stride;
    uint32_t count;
    void* p = region_perfdata(&stride, &count);
    if (p && !lockstat_set_storage(p, stride * count, stride))
        kprintf("region: lockstat refused the perf data section (stride %lu)\n", stride);
}

void* region_trace(uint64_t* size) {
    if (!base) return nullptr;
    const auto& s = layout.section(spinlab::RegionSection::kTrace);
    *size = s.size;
    return s.size ? base + s.offset : nullptr;
}

const spinlab::VcpuStateArea* region_vcpu_state() {
    return base ? section<const spinlab::VcpuStateArea>(spinlab::RegionSection::kVcpuState) : nullptr;
}
