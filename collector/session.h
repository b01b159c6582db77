// collector/session.h: one attachment to a guest: its shared region (mapped once) and its
// control channel (connected on demand, dropped again when a long-running command no longer
// needs it, because QEMU's chardev socket serves one client at a time).
#pragma once
#include <spinlab/sysinfo.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "attach.h"
#include "channel_client.h"
#include "options.h"
#include "region_reader.h"
#include "snapshot.h"

namespace spinlab::collect {

class Session {
public:
    explicit Session(const Config& c);

    bool has_region() const { return !paths_.shm.empty(); }
    bool has_channel() const { return !paths_.socket.empty(); }
    const AttachPaths& paths() const { return paths_; }

    // Map on first use. Throws CollectError when there is no region path or it is unusable.
    RegionReader& region();
    // Connect on first use. Throws CollectError when there is no socket or nobody answers.
    ChannelClient& channel();
    void drop_channel() { channel_.reset(); }
    // The timeout of each channel request from the next connection on (the Config's timeout_ms
    // until then); drops the current connection. A runner probing a booting guest asks with a
    // short one: a request sent before the guest's channel handler runs is never answered.
    void set_channel_timeout(std::chrono::milliseconds t) {
        channel_timeout_ = t;
        drop_channel();
    }
    std::chrono::milliseconds channel_timeout() const { return channel_timeout_; }

    // Whether snapshots come from the region (per --source).
    bool snapshots_from_region() const;
    // Every CPU's counters, from the region or through the channel (--source).
    Snapshot snapshot();

    // Lock class names through the channel; generic names (and `warning` set) when the channel
    // is not available.
    ClassNames class_names(std::string* warning);
    SystemConfiguration configuration();
    // The guest's workload and its operations so far (kSpinlabWorkloadInformation); nullopt from
    // a guest that does not count them (spinlab's kernel answers kInvalidInfoClass). Throws
    // CollectError for any other refusal or a wrong-sized answer.
    std::optional<WorkloadInformation> workload();

    // Throws CollectError(kExitFailure) naming the status when a call failed.
    CallResult checked_query(InfoClass c, std::span<const uint8_t> input, uint32_t length,
                             const char* what);

private:
    Snapshot snapshot_through_channel();

    Config config_;
    AttachPaths paths_;
    std::unique_ptr<RegionReader> region_;
    std::unique_ptr<ChannelClient> channel_;
    std::chrono::milliseconds channel_timeout_;
    uint32_t perf_length_hint_ = 0;  // the length the last perf-data query needed
};

}  // namespace spinlab::collect
