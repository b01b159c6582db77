// spinlab/shm.h: the shared-memory region (QEMU ivshmem-plain) the guest writes and the host
// maps: its header, its layout and its concurrency protocol.
//
// On the host the region is a file (-object memory-backend-file,share=on,mem-path=/dev/shm/
// spinlab-NAME); in the guest it is BAR 2 of the ivshmem PCI device. Reading it costs the guest
// nothing: no request, no interrupt, no VM exit.
//
//  offset 0                  4096                 4096 + k*stride            trace.offset
//  +-------------------------+--------------------+----------- ... ---------+------------------+
//  | page 0                  | CpuPerfData cpu 0  | CpuPerfData cpu k ...   | trace buffers    |
//  |  RegionHeader     @0    | (perfdata.h)       | (stride bytes each,     | (spinlab/trace.h;|
//  |  ClockArea        @1024 |                    |  page aligned)          |  the trace area  |
//  |  ChannelServerStats@2048|                    |                         |  rest of region) |
//  |  VcpuStateArea    @3072 |                    |                         |                  |
//  |   (HOST-written)        |                    |                         |                  |
//  +-------------------------+--------------------+----------- ... ---------+------------------+
//  The offsets above are what region_layout() produces today; readers must use the section
//  table in the header, never these numbers.
//
//  Who writes what                              How the host reads it
//  -------------------------------------------  ------------------------------------------------
//  RegionHeader: the boot CPU, once at boot      BeginRead: g1 = generation (acquire); odd or 0
//   (and again after a guest reboot):            means "being laid out": retry later. Copy the
//   generation -> odd, write fields, generation  header, validate it (region_parse), copy what
//   -> next even value (release).                you need, EndRead: g2 = generation; g1 != g2
//                                                means the guest re-laid the region: start over.
//  CpuPerfData[k]: CPU k only, plain 64-bit      Plain aligned 64-bit loads; each field is whole,
//   increments with interrupts off (see          fields of a record in flight may disagree; CPUs
//   perfdata.h). No seqcount: a seqcount per     are read one after the other (per-CPU skew).
//   record would cost the hot path and could     Accepted, because vCPUs never run in lockstep
//   never make vCPUs that run at different       anyway: a "simultaneous" cross-CPU snapshot does
//   times agree; resets bump CpuPerfData.resets. not exist. The invariants hold exactly once the
//                                                writer is quiescent.
//  ClockArea: one guest CPU (the timer tick),    Seqcount: s1 = seq (acquire, retry while odd),
//   seqcount writer: seq -> odd, write           copy, s2 = seq; s1 == s2 gives a consistent
//   guest_tsc and count, seq -> even (release).  publication. The host brackets the moment seq
//   The TSC is read immediately before storing.  changed between two host TSC reads (clock sync).
//  ChannelServerStats: the guest channel server  Plain loads, skew accepted (diagnostic counts).
//   (one CPU at a time, under its lock).
//  Trace area: see spinlab/trace.h (per-CPU      See spinlab/trace.h (take a full buffer, give
//   buffers, its own protocol).                   it back).
//  VcpuStateArea: written by the HOST            The guest reads one word per vCPU (see
//   (spinlab-load: which vCPU threads are off     spinlab/vcpu_state.h); the guest lays it out
//   their host CPU); spinlab/vcpu_state.h.        (zeroed) and never writes it afterwards.
//
// Versioning: abi_version changes whenever anything in this file or in perfdata.h changes
// incompatibly; a reader refuses a region whose version it does not know (no guessing).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include <spinlab/channel.h>
#include <spinlab/perfdata.h>
#include <spinlab/vcpu_state.h>

namespace spinlab {

inline constexpr uint64_t kRegionMagic = 0x4E474552424C5053ULL;  // bytes "SPLBREGN"
// 2: the section table gained kVcpuState (the header is 24 bytes longer).
inline constexpr uint32_t kRegionAbiVersion = 2;
inline constexpr uint32_t kRegionMaxCpus = 64;
inline constexpr uint32_t kRegionAlign = 64;      // every section starts on a cache line
inline constexpr uint32_t kRegionPageSize = 4096;  // per-CPU blocks start on pages

enum class RegionSection : uint32_t {
    kPerfData = 0,       // cpu_count CpuPerfData blocks, `stride` apart
    kClock = 1,          // one ClockArea
    kChannelStats = 2,   // one ChannelServerStats
    kTrace = 3,          // per-CPU trace buffers, spinlab/trace.h (size may be 0)
    kVcpuState = 4,      // one VcpuStateArea, written by the host (spinlab/vcpu_state.h)
    kCount = 5,
};

struct RegionSectionEntry {
    uint64_t offset;  // from the start of the region
    uint64_t size;    // bytes
    uint32_t stride;  // distance between elements (0 for a single object)
    uint32_t count;   // elements (1 for a single object)
};
static_assert(sizeof(RegionSectionEntry) == 24, "ABI");

// At offset 0 of the region. Written by the guest's boot CPU only (protocol above).
struct RegionHeader {
    uint64_t magic;              // kRegionMagic
    uint32_t abi_version;        // kRegionAbiVersion
    uint32_t header_size;        // sizeof(RegionHeader) as the guest built it
    uint64_t region_size;        // bytes the guest laid out (<= the mapped size)
    uint64_t generation;         // odd: being laid out; even, non-zero: valid
    uint32_t cpu_count;          // CPUs whose CpuPerfData exists
    uint32_t perfdata_version;   // kPerfDataVersion
    uint32_t perfdata_size;      // sizeof(CpuPerfData)
    uint32_t section_count;      // RegionSection::kCount
    uint64_t tsc_hz;             // guest TSC frequency as calibrated by the guest; 0: unknown
    uint64_t boot_tsc;           // guest TSC when the region was laid out
    uint64_t reserved[4];
    RegionSectionEntry sections[static_cast<uint32_t>(RegionSection::kCount)];
};
// magic and generation keep these offsets in every region ABI version: a reader tells a header
// being laid out (generation odd) from one of another ABI by them (region_parse).
static_assert(offsetof(RegionHeader, generation) == 24, "ABI");
static_assert(offsetof(RegionHeader, cpu_count) == 32, "ABI");
static_assert(offsetof(RegionHeader, tsc_hz) == 48, "ABI");
static_assert(offsetof(RegionHeader, sections) == 96, "ABI");
static_assert(sizeof(RegionHeader) == 96 + 24 * 5, "ABI");

// A clock the guest reads beside its TSC in each publication (ClockArea::ref_source), so the
// host can place the TSC without watching the publication happen (collector/clock_reference.h).
#define SPINLAB_CLOCK_REFERENCE(X)                                                           \
    /* none: only the host's bracket around the publication places it */                   \
    X(kNone, 0, "none")                                                                      \
    /* the HPET's main counter: under QEMU, the host's CLOCK_MONOTONIC plus an offset that */ \
    /* stays put while the VM runs, whatever QEMU does to the guest's TSC */                \
    X(kHpet, 1, "hpet")
SPINLAB_DENSE_ENUM(ClockReference, uint32_t, SPINLAB_CLOCK_REFERENCE, kClockReferenceNames,
                   clock_reference_name);

// Guest TSC publications for clock correlation. Written under `seq` by one guest CPU at a time:
// any CPU's timer tick may publish (the first after about half a period), taking `seq` odd
// with a compare-and-swap, so publications go on while some vCPU is frozen or descheduled.
// With a reference clock, the publishing CPU reads its TSC (ref_guest_tsc), the reference
// (ref_ticks) and its TSC again (guest_tsc), in that order: the reference was read between the
// two. Regions from before the reference read zeros there: kNone.
struct ClockArea {
    uint64_t seq;           // odd while the guest writes
    uint64_t guest_tsc;     // guest TSC read just before this publication
    uint64_t count;         // publications since boot (a heartbeat: it stops when the guest dies)
    uint32_t cpu;           // the CPU that published
    uint32_t period_us;     // intended time between publications
    uint64_t ref_ticks;     // the reference clock, read between ref_guest_tsc and guest_tsc
    uint64_t ref_guest_tsc; // guest TSC read just before ref_ticks
    uint32_t ref_period_fs; // the reference's tick in femtoseconds
    uint32_t ref_source;    // ClockReference
    uint64_t reserved[1];
};
static_assert(sizeof(ClockArea) == 64, "ClockArea is one cache line");
static_assert(offsetof(ClockArea, ref_ticks) == 32 && offsetof(ClockArea, ref_source) == 52, "ABI");

// What the guest's channel server could not parse or answered with an error (it cannot
// answer what it cannot parse, so it counts here). Written by the channel server only.
struct ChannelServerStats {
    uint64_t requests;       // frames handed to the sysinfo handler
    uint64_t errors_sent;    // error frames sent
    uint64_t skipped_bytes;  // garbage skipped while hunting for a frame magic
    uint64_t rejected[static_cast<uint32_t>(FrameError::kCount)];  // by FrameError
    uint64_t reserved[3];
};
static_assert(sizeof(ChannelServerStats) % 8 == 0, "ABI");

inline constexpr uint64_t kRegionClockOffset = 1024;
inline constexpr uint64_t kRegionChannelStatsOffset = 2048;
inline constexpr uint64_t kRegionVcpuStateOffset = 3072;
static_assert(sizeof(RegionHeader) <= kRegionClockOffset, "header fits before the clock area");
static_assert(kRegionChannelStatsOffset + sizeof(ChannelServerStats) <= kRegionVcpuStateOffset,
              "channel stats fit before the vCPU state area");
static_assert(kRegionVcpuStateOffset + sizeof(VcpuStateArea) <= kRegionPageSize,
              "page 0 holds header, clock, channel stats and the vCPU state area");
static_assert(kVcpuStateEntries == kRegionMaxCpus, "one vCPU state entry per possible CPU");

}  // namespace spinlab
