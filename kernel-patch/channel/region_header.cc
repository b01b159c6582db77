// channel/region_header.cc: see region_header.h and the protocol at the top of spinlab/shm.h.
#include "region_header.h"

namespace spinlab {
namespace {

constexpr uint32_t kSections = static_cast<uint32_t>(RegionSection::kCount);

constexpr uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

constexpr uint32_t perf_stride() { return uint32_t(round_up(sizeof(CpuPerfData), kRegionPageSize)); }

uint64_t load_generation(const void* base) {
    // Acquire: the header fields read after this load are not older than this generation.
    return __atomic_load_n(&static_cast<const RegionHeader*>(base)->generation, __ATOMIC_ACQUIRE);
}

// The minimum size and element size each section must have.
uint64_t min_section_size(RegionSection s, uint32_t cpu_count) {
    switch (s) {
        case RegionSection::kPerfData: return uint64_t(sizeof(CpuPerfData)) * cpu_count;
        case RegionSection::kClock: return sizeof(ClockArea);
        case RegionSection::kChannelStats: return sizeof(ChannelServerStats);
        case RegionSection::kTrace: return 0;
        case RegionSection::kVcpuState: return sizeof(VcpuStateArea);  // the host writes it whole
        case RegionSection::kCount: break;
    }
    return 0;
}

}  // namespace

const char* region_error_name(RegionError e) {
    switch (e) {
        case RegionError::kNone: return "ok";
        case RegionError::kTooSmall: return "region too small";
        case RegionError::kBadMagic: return "not a spinlab region (bad magic)";
        case RegionError::kBadVersion: return "region ABI version mismatch";
        case RegionError::kBusy: return "region is being laid out by the guest";
        case RegionError::kBadHeaderSize: return "region header size mismatch";
        case RegionError::kBadRegionSize: return "region size larger than the mapping";
        case RegionError::kBadCpuCount: return "bad CPU count";
        case RegionError::kBadPerfData: return "perf data version or size mismatch";
        case RegionError::kBadSection: return "bad section table";
        case RegionError::kChanged: return "region was re-laid out while reading";
    }
    return "unknown region error";
}

uint64_t region_size_needed(uint32_t cpu_count, uint64_t trace_bytes) {
    return kRegionPageSize + uint64_t(perf_stride()) * cpu_count + round_up(trace_bytes, kRegionAlign);
}

RegionError region_layout(void* base, uint64_t size, uint32_t cpu_count, uint64_t tsc_hz,
                          uint64_t boot_tsc) {
    if (cpu_count == 0 || cpu_count > kRegionMaxCpus) return RegionError::kBadCpuCount;
    if (size < region_size_needed(cpu_count, 0)) return RegionError::kTooSmall;
    auto* h = static_cast<RegionHeader*>(base);

    // Generation goes odd before anything else changes, so a reader that copied part of the
    // old layout sees a different generation at EndRead. Starting from the old value (a
    // reboot keeps the file's contents) keeps generations increasing across guest boots.
    // An even old value E becomes E+1; an odd one (a crash mid-layout) stays odd. Either way
    // the final even value is above every generation a reader accepted before.
    uint64_t gen = (h->magic == kRegionMagic ? h->generation : 0) | 1;
    __atomic_store_n(&h->generation, gen, __ATOMIC_RELAXED);
    // Release fence: the odd generation is visible before any field below changes
    // (a compiler barrier on x86, whose stores are not reordered with each other).
    __atomic_thread_fence(__ATOMIC_RELEASE);

    // Zero everything after the header up to the trace section's first page: old counters must
    // not survive a reboot, and the trace area's header (its first page) must read "never
    // started". The rest of the trace section is left as it is: a session lays out its controls
    // and slots when it starts (locktrace/trace_session.h), a writer fills a buffer before a slot
    // publishes it, and the host reads nothing else. Zeroing it too cost 12 s of every boot
    // under the build machines' nested KVM (16 MiB, ~3 ms per page the guest touches first).
    const uint64_t perf_size = uint64_t(perf_stride()) * cpu_count;
    const uint64_t trace_off = kRegionPageSize + perf_size;
    const uint64_t cleared = trace_off + kRegionPageSize < size ? trace_off + kRegionPageSize : size;
    uint8_t* p = static_cast<uint8_t*>(base);
    __builtin_memset(p + sizeof(RegionHeader), 0, cleared - sizeof(RegionHeader));

    RegionHeader fresh{};
    fresh.magic = kRegionMagic;
    fresh.abi_version = kRegionAbiVersion;
    fresh.header_size = sizeof(RegionHeader);
    fresh.region_size = size;
    fresh.generation = gen;
    fresh.cpu_count = cpu_count;
    fresh.perfdata_version = kPerfDataVersion;
    fresh.perfdata_size = sizeof(CpuPerfData);
    fresh.section_count = kSections;
    fresh.tsc_hz = tsc_hz;
    fresh.boot_tsc = boot_tsc;
    uint64_t perf_off = kRegionPageSize;
    fresh.sections[uint32_t(RegionSection::kPerfData)] = {perf_off, perf_size, perf_stride(),
                                                          cpu_count};
    fresh.sections[uint32_t(RegionSection::kClock)] = {kRegionClockOffset, sizeof(ClockArea), 0, 1};
    fresh.sections[uint32_t(RegionSection::kChannelStats)] = {kRegionChannelStatsOffset,
                                                              sizeof(ChannelServerStats), 0, 1};
    fresh.sections[uint32_t(RegionSection::kTrace)] = {trace_off, size - trace_off, 0, 1};
    // Zeroed above: every vCPU reads "running" until a host writer says otherwise.
    fresh.sections[uint32_t(RegionSection::kVcpuState)] = {kRegionVcpuStateOffset,
                                                           sizeof(VcpuStateArea), 0, 1};
    __builtin_memcpy(p, &fresh, sizeof fresh);

    // Release: every field above is visible before the even generation that validates them.
    __atomic_store_n(&h->generation, gen + 1, __ATOMIC_RELEASE);
    return RegionError::kNone;
}

RegionError region_parse(const void* base, uint64_t mapped_size, RegionLayout* out) {
    if (base == nullptr || mapped_size < sizeof(RegionHeader)) return RegionError::kTooSmall;
    uint64_t gen = load_generation(base);
    // Copy once, then validate the copy: the writer (or a hostile guest) may change the
    // shared bytes between two reads of the same field.
    RegionHeader h;
    __builtin_memcpy(&h, base, sizeof h);
    if (h.magic != kRegionMagic) return RegionError::kBadMagic;
    // Busy before anything else is judged: the guest copies the new header over the old one
    // while the generation is odd, so a copy taken then may have the magic and not yet the
    // versions (seen under nested KVM, whose guest copies slowly: "region ABI 2, this collector
    // reads 2"). The generation's offset is fixed across ABI versions (shm.h).
    if (gen == 0 || (gen & 1) || h.generation != gen) return RegionError::kBusy;
    if (h.abi_version != kRegionAbiVersion) return RegionError::kBadVersion;
    if (h.header_size != sizeof(RegionHeader) || h.section_count != kSections)
        return RegionError::kBadHeaderSize;
    if (h.region_size > mapped_size || h.region_size < kRegionPageSize)
        return RegionError::kBadRegionSize;
    if (h.cpu_count == 0 || h.cpu_count > kRegionMaxCpus) return RegionError::kBadCpuCount;
    if (h.perfdata_version != kPerfDataVersion || h.perfdata_size != sizeof(CpuPerfData))
        return RegionError::kBadPerfData;

    for (uint32_t i = 0; i < kSections; ++i) {
        const RegionSectionEntry& s = h.sections[i];
        auto kind = RegionSection(i);
        // Bounds without overflow: offset <= region_size and size <= region_size - offset.
        if (s.offset > h.region_size || s.size > h.region_size - s.offset)
            return RegionError::kBadSection;
        if (s.offset % kRegionAlign != 0 || s.offset < sizeof(RegionHeader))
            return RegionError::kBadSection;
        if (s.size < min_section_size(kind, h.cpu_count)) return RegionError::kBadSection;
        if (kind == RegionSection::kPerfData) {
            if (s.stride < sizeof(CpuPerfData) || s.stride % kRegionAlign != 0 ||
                s.count < h.cpu_count || uint64_t(s.stride) * h.cpu_count > s.size)
                return RegionError::kBadSection;
        }
        // Sections must not overlap: a reader would otherwise interpret one writer's bytes as
        // another structure.
        for (uint32_t j = 0; j < i; ++j) {
            const RegionSectionEntry& t = h.sections[j];
            if (s.size != 0 && t.size != 0 && s.offset < t.offset + t.size &&
                t.offset < s.offset + s.size)
                return RegionError::kBadSection;
        }
    }

    out->region_size = h.region_size;
    out->generation = gen;
    out->cpu_count = h.cpu_count;
    out->tsc_hz = h.tsc_hz;
    out->boot_tsc = h.boot_tsc;
    for (uint32_t i = 0; i < kSections; ++i) out->sections[i] = h.sections[i];
    return RegionError::kNone;
}

RegionError region_end_read(const void* base, const RegionLayout& layout) {
    // Acquire fence: the data loads of the read section happen before this generation load.
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    uint64_t gen = __atomic_load_n(&static_cast<const RegionHeader*>(base)->generation,
                                   __ATOMIC_RELAXED);
    return gen == layout.generation ? RegionError::kNone : RegionError::kChanged;
}

}  // namespace spinlab
