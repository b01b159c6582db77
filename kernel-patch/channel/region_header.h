// channel/region_header.h: laying out the shared region (guest) and checking its header (host).
// The layout and the protocol are described at the top of spinlab/shm.h. Freestanding.
#pragma once
#include <spinlab/shm.h>
#include <stddef.h>
#include <stdint.h>

namespace spinlab {

enum class RegionError : uint32_t {
    kNone = 0,
    kTooSmall,          // the mapping cannot hold a header (or the layout does not fit)
    kBadMagic,          // not a spinlab region (or the guest has not written it yet)
    kBadVersion,        // abi_version is not kRegionAbiVersion
    kBusy,              // generation odd or zero: the guest is laying it out
    kBadHeaderSize,     // header_size differs from sizeof(RegionHeader)
    kBadRegionSize,     // region_size larger than the mapping
    kBadCpuCount,       // cpu_count 0 or above kRegionMaxCpus
    kBadPerfData,       // perfdata_version/size differ from this build's perfdata.h
    kBadSection,        // a section is out of bounds, misaligned, too small or overlapping
    kChanged,           // the generation changed while reading (EndRead): read again
};

const char* region_error_name(RegionError e);

// What a reader needs, copied out of a validated header.
struct RegionLayout {
    uint64_t region_size;
    uint64_t generation;
    uint32_t cpu_count;
    uint64_t tsc_hz;
    uint64_t boot_tsc;
    RegionSectionEntry sections[static_cast<uint32_t>(RegionSection::kCount)];

    const RegionSectionEntry& section(RegionSection s) const {
        return sections[static_cast<uint32_t>(s)];
    }
};

// Bytes needed for cpu_count CPUs with trace_bytes of trace area.
uint64_t region_size_needed(uint32_t cpu_count, uint64_t trace_bytes);

// Guest: lays out and zeroes a region of `size` bytes at `base`, giving the rest after the
// per-CPU blocks to the trace section. The header's generation goes odd first and ends even and
// above any value it had before (a guest reboot must not look like the same layout). Returns
// kTooSmall (writing nothing) when the region cannot hold cpu_count CPUs, kBadCpuCount for 0 or
// more than kRegionMaxCpus.
RegionError region_layout(void* base, uint64_t size, uint32_t cpu_count, uint64_t tsc_hz,
                          uint64_t boot_tsc);

// Reader, BeginRead: validates the header of a mapping of `mapped_size` bytes (shared with a
// writer that may be running or hostile) and fills `out`. Never reads outside
// [base, base + mapped_size), never trusts a field before checking it.
RegionError region_parse(const void* base, uint64_t mapped_size, RegionLayout* out);

// Reader, EndRead: kChanged when the region was re-laid out since `layout` was parsed.
RegionError region_end_read(const void* base, const RegionLayout& layout);

// The address of CPU k's perf data in a mapping parsed into `layout` (k < cpu_count).
inline const CpuPerfData* region_cpu(const void* base, const RegionLayout& layout, uint32_t k) {
    const RegionSectionEntry& s = layout.section(RegionSection::kPerfData);
    return reinterpret_cast<const CpuPerfData*>(static_cast<const uint8_t*>(base) + s.offset +
                                                uint64_t(s.stride) * k);
}

}  // namespace spinlab
