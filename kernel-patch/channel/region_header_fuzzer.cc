// libFuzzer target: the shared region's header parser on arbitrary bytes (a hostile or
// half-written region). What must hold: no crash or out-of-bounds read (ASan), and when the
// parser accepts, every section and every CPU block it hands out lies inside the mapping.
#include <stddef.h>
#include <stdint.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "channel/clock_area.h"
#include "channel/region_header.h"

using namespace spinlab;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // An exact-size heap copy: ASan flags any read past `size`. 8-byte aligned like a mapping.
    RegionLayout l;
    if (size == 0) return region_parse(nullptr, 0, &l) == RegionError::kNone ? (std::abort(), 0) : 0;
    std::vector<uint64_t> words((size + 7) / 8);
    std::memcpy(words.data(), data, size);
    const uint8_t* base = reinterpret_cast<const uint8_t*>(words.data());
    // Half the inputs get the fixed fields made right (magic, versions, sizes, an even
    // generation), so the fuzzer spends its time on the section table and sizes, where the
    // bounds checks are, instead of on guessing a 64-bit magic.
    if ((data[0] & 1) && size >= sizeof(RegionHeader)) {
        auto* h = reinterpret_cast<RegionHeader*>(words.data());
        h->magic = kRegionMagic;
        h->abi_version = kRegionAbiVersion;
        h->header_size = sizeof(RegionHeader);
        h->section_count = uint32_t(RegionSection::kCount);
        h->perfdata_version = kPerfDataVersion;
        h->perfdata_size = sizeof(CpuPerfData);
        h->generation = (h->generation | 2) & ~1ull;
        if (data[0] & 2) h->region_size = size;
    }
    if (region_parse(base, size, &l) != RegionError::kNone) return 0;
    for (uint32_t i = 0; i < uint32_t(RegionSection::kCount); ++i) {
        const RegionSectionEntry& s = l.sections[i];
        if (s.offset > size || s.size > size - s.offset) std::abort();
    }
    volatile uint64_t sink = 0;
    for (uint32_t k = 0; k < l.cpu_count; ++k) {
        const CpuPerfData* c = region_cpu(base, l, k);
        sink = sink + c->magic + c->classes[kMaxLockClasses - 1].hold_hist[kHistBuckets - 1];
    }
    ClockReading r;
    clock_try_read(reinterpret_cast<const ClockArea*>(base + l.section(RegionSection::kClock).offset),
                   &r);
    (void)region_end_read(base, l);
    return 0;
}
