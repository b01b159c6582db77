// collector/region_reader.h: the host's view of the guest's shared region (spinlab/shm.h):
// maps the memory-backend file read-only, checks its header, and reads counters, the clock
// publication and the channel server's counts without disturbing the guest.
#pragma once
#include <spinlab/shm.h>

#include <chrono>
#include <optional>
#include <string>

#include "channel/clock_area.h"
#include "channel/region_header.h"
#include "clock_sync.h"
#include "snapshot.h"

namespace spinlab::collect {

class RegionReader {
public:
    // Maps `path` and validates its header, retrying while the guest is laying it out, for up
    // to `timeout`. Throws CollectError: kExitNoVm (no file, or the guest never finished laying
    // it out), kExitAbi (a region of another ABI version), kExitFailure (not a spinlab region).
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
    std::optional<ClockReading> clock();

    // Polls the clock publication until it changes, bracketing the change between two host
    // TSC reads (see clock_sync.h); repeats until a bracket is at most good_width host cycles
    // wide, returning the narrowest seen. nullopt when nothing was published within max_wait.
    std::optional<ClockSample> sample_clock(std::chrono::milliseconds max_wait,
                                            uint64_t good_width = kGoodClockBracket);
    static constexpr uint64_t kGoodClockBracket = kMaxClockBracket;  // what fit_clock keeps

    ChannelServerStats channel_stats() const;

    // The file was unlinked (the VM launcher removes it when the VM is gone).
    bool unlinked() const;

private:
    void parse(std::chrono::milliseconds timeout);
    std::optional<ClockSample> sample_once(std::chrono::steady_clock::time_point deadline);

    std::string path_;
    int fd_ = -1;
    const uint8_t* base_ = nullptr;
    size_t mapped_ = 0;
    RegionLayout layout_{};
};

}  // namespace spinlab::collect
