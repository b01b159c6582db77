// collector/region_reader.h: the host's view of the guest's shared region (spinlab/shm.h):
// maps the memory-backend file read-only, checks its header, and reads counters, the clock
// publication and the channel server's counts without disturbing the guest.
//
// The guest is not trusted (docs/architecture.md, "What the host trusts"). The header is copied
// and checked against the mapping's size once (region_parse, at attach and again only when the
// guest re-lays the region out: a new generation); every address comes from that copy. Clock
// publications are checked before use (check_clock). A region that breaks its rules throws
// CollectError(kExitCorrupt) naming the field.
#pragma once
#include <spinlab/shm.h>

#include <chrono>
#include <optional>
#include <string>

#include "channel/clock_area.h"
#include "channel/region_header.h"
#include "clock_sync.h"
#include "halt_log.h"
#include "hostlib/error.h"
#include "hostlib/mapped_region.h"
#include "snapshot.h"

namespace spinlab::collect {

// The error for a region_parse failure that is not transient (not kBusy, kBadMagic): kExitAbi
// for another ABI version, kExitCorrupt naming the field otherwise. `base` is the mapping (the
// header is copied once from it for the message).
CollectError region_error(const std::string& path, RegionError e, const void* base);

// The header of a region just mapped, judged the same way for every reader (RegionReader, the
// trace drain): region_parse, retried while the guest is still laying the region out (kBusy,
// kBadMagic) for up to `wait`. Throws CollectError: kExitNoVm (never laid out within `wait`),
// kExitAbi ("ABI version mismatch", both versions named), kExitCorrupt naming the field.
RegionLayout attach_layout(const MappedRegion& map, std::chrono::milliseconds wait);

// The longest publication period a guest may state (its timer tick is 10 ms).
inline constexpr uint32_t kMaxClockPeriodUs = 1'000'000;

// Checks one consistent clock publication against the layout and the previous one accepted
// (`last`, null for the first): cpu below cpu_count, period_us 1..kMaxClockPeriodUs, count not
// below last's. Returns what is wrong ("clock publication: count went backwards (5 after 9)"),
// or "" when it is fine.
std::string check_clock(const ClockReading& r, const RegionLayout& layout, const ClockReading* last);
// The reference clock's fields of a publication (part of check_clock): "" when they hold.
std::string check_clock_reference(const ClockReading& r);
inline constexpr uint32_t kMaxClockRefPeriodFs = 100'000'000;  // 100 ns: the HPET's slowest

class RegionReader {
public:
    // Maps `path` and validates its header, retrying while the guest is laying it out, for up
    // to `timeout`. Throws CollectError: kExitNoVm (no file, or the guest never finished laying
    // it out), kExitAbi (a region of another ABI version), kExitFailure (a file too small to be
    // a region), kExitCorrupt (a header that breaks its rules, naming the field). Once attached,
    // any header the guest breaks later (seen at a new generation) is kExitCorrupt.
    RegionReader(const std::string& path, std::chrono::milliseconds timeout);
    ~RegionReader();
    RegionReader(const RegionReader&) = delete;
    RegionReader& operator=(const RegionReader&) = delete;

    const RegionLayout& layout() const { return layout_; }
    const std::string& path() const { return path_; }

    // Every CPU's counters (BeginRead .. EndRead of shm.h). Retries when the guest re-laid the
    // region out meanwhile (re-parsing the header); throws when it stays unreadable.
    Snapshot snapshot();

    // The latest clock publication (nullopt while one is being written, after a few retries).
    // Throws CollectError(kExitCorrupt) when it fails check_clock.
    std::optional<ClockReading> clock();

    // Polls the clock publication until it changes, bracketing the change between two host
    // TSC reads (see clock_sync.h); repeats until a bracket is at most good_width host cycles
    // wide, returning the narrowest seen. nullopt when nothing was published within max_wait.
    std::optional<ClockSample> sample_clock(std::chrono::microseconds max_wait,
                                            uint64_t good_width = kGoodClockBracket);
    static constexpr uint64_t kGoodClockBracket = kMaxClockBracket;  // what fit_clock keeps

    // CPU `cpu`'s halt log (perfdata.h HaltLog), copied by its reader protocol into *out:
    // recording, written (acquire), the spans from span `from` on (at most the last
    // kHaltLogSpans before that `written`), written again, halted_since (halt_log.h
    // HaltLogCopy). The CPU's block comes from the layout's perf-data section, which
    // region_parse checked to hold cpu_count blocks inside the mapping, as snapshot() reads it.
    // Nothing is checked here but where it reads: drain_halt_log judges the words.
    enum class HaltRead {
        kRead,
        kNotInitialised,  // the CPU's lockstat init has not run (no magic): nothing to read yet
        kRelaidOut,       // the guest laid the region out again (a reboot); the layout is the new one
    };
    HaltRead halt_log(uint32_t cpu, uint64_t from, HaltLogCopy* out);

    ChannelServerStats channel_stats() const;

    // The file was unlinked (the VM launcher removes it when the VM is gone).
    bool unlinked() const;

private:
    // The guest re-laid the region out after we attached: a header it breaks now is corrupt.
    void reparse();
    std::optional<ClockSample> sample_once(std::chrono::steady_clock::time_point deadline);
    // One attempt at a consistent publication, checked (throws as clock() does).
    bool read_clock(ClockReading* r);
    const ClockArea* clock_area() const;

    std::string path_;
    MappedRegion map_;             // read-only
    const uint8_t* const base_;    // map_.data()
    const size_t mapped_;          // map_.size()
    RegionLayout layout_;          // attach_layout's, then reparse()'s at a new generation
    std::optional<ClockReading> last_clock_;  // the last publication accepted (this generation)
};

}  // namespace spinlab::collect
