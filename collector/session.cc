// collector/session.cc: see session.h.
#include "session.h"

#include <spinlab/shm.h>
#include <spinlab/status.h>

#include <cstring>

#include "hostlib/error.h"
#include "hostlib/host_tsc.h"

namespace spinlab::collect {

Session::Session(const Config& c)
    : config_(c), paths_(resolve_attach(c.attach)), channel_timeout_(c.timeout_ms) {
    if (c.source == "region" && !has_region())
        throw CollectError(kExitUsage, "--source region needs --shm (or a VM with a shared region)");
    if (c.source == "channel" && !has_channel())
        throw CollectError(kExitUsage, "--source channel needs --socket (or --vm)");
}

RegionReader& Session::region() {
    if (!region_) {
        if (!has_region())
            throw CollectError(kExitUsage, "no shared region to read: give --shm or --vm");
        region_ = std::make_unique<RegionReader>(paths_.shm,
                                                 std::chrono::milliseconds(config_.timeout_ms));
    }
    return *region_;
}

ChannelClient& Session::channel() {
    if (!channel_) {
        if (!has_channel())
            throw CollectError(kExitUsage, "this needs the control channel: give --socket or --vm");
        channel_ = std::make_unique<ChannelClient>(paths_.socket, channel_timeout_);
    }
    return *channel_;
}

bool Session::snapshots_from_region() const {
    if (config_.source == "region") return true;
    if (config_.source == "channel") return false;
    return has_region();
}

CallResult Session::checked_query(InfoClass c, std::span<const uint8_t> input, uint32_t length,
                                  const char* what) {
    CallResult r = channel().query(uint32_t(c), 0, input, length);
    if (r.status != uint32_t(Status::kSuccess))
        throw CollectError(kExitFailure, std::string("the guest refused the ") + what +
                                             " query: " + status_name(r.status));
    return r;
}

Snapshot Session::snapshot() {
    return snapshots_from_region() ? region().snapshot() : snapshot_through_channel();
}

Snapshot Session::snapshot_through_channel() {
    Snapshot s;
    s.host_ns = realtime_ns();
    s.host_tsc = host_tsc();
    SpinlockPerfRequest req{};
    req.cpu = kAllCpus;
    req.lock_class = kAllLockClasses;
    req.flags = 0;
    // The answer's size depends on the guest's CPUs and classes: ask, and if the guest says
    // the buffer is too small, ask again with the length it needs.
    uint32_t length = std::max<uint32_t>(perf_length_hint_, sizeof req);
    CallResult r;
    for (int attempt = 0; attempt < 3; ++attempt) {
        r = channel().query(uint32_t(InfoClass::kSpinlabSpinlockPerfData), 0, bytes_of(req),
                            length);
        if (r.status != uint32_t(Status::kInfoLengthMismatch)) break;
        if (r.return_length > kMaxPayload)
            throw CollectError(kExitFailure,
                               "the guest's perf data (" + std::to_string(r.return_length) +
                                   " bytes) is larger than the channel carries; use --source "
                                   "region");
        length = r.return_length;
    }
    if (r.status != uint32_t(Status::kSuccess))
        throw CollectError(kExitFailure,
                           std::string("the guest refused the perf data query: ") +
                               status_name(r.status));
    perf_length_hint_ = length;
    SpinlockPerfReply head;
    if (r.data.size() < sizeof head)
        throw CollectError(kExitFailure, "the guest's perf data answer is shorter than its head");
    std::memcpy(&head, r.data.data(), sizeof head);
    if (head.record_size != sizeof(SpinlockPerfRecord) ||
        uint64_t(head.record_count) * head.record_size > r.data.size() - sizeof head)
        throw CollectError(kExitAbi, "ABI version mismatch: the guest's perf data records are "
                                     "not the layout this collector reads");
    for (uint32_t i = 0; i < head.record_count; ++i) {
        SpinlockPerfRecord rec;
        std::memcpy(&rec, r.data.data() + sizeof head + size_t(i) * sizeof rec, sizeof rec);
        if (rec.class_id >= kMaxLockClasses || rec.cpu == kAllCpus) continue;
        if (rec.cpu >= kRegionMaxCpus)  // an index: checked before it sizes the CPU list
            throw CollectError(kExitCorrupt, "the guest's perf data answer is corrupt: record " +
                                                 std::to_string(i) + " names cpu " +
                                                 std::to_string(rec.cpu) + " (at most " +
                                                 std::to_string(kRegionMaxCpus - 1) + ")");
        while (s.cpus.size() <= rec.cpu) s.cpus.push_back(empty_cpu(uint32_t(s.cpus.size())));
        s.cpus[rec.cpu].classes[rec.class_id] = rec.perf;
    }
    s.read_cycles = host_tsc() - s.host_tsc;
    return s;
}

ClassNames Session::class_names(std::string* warning) {
    ClassNames names;
    if (!has_channel()) {
        *warning = "lock class names are not available without the control channel";
        return names;
    }
    try {
        uint32_t length = sizeof(LockClassTableReply) + kMaxLockClasses * sizeof(LockClassEntry);
        CallResult r = checked_query(InfoClass::kSpinlabLockClassTable, {}, length, "lock class table");
        LockClassTableReply head;
        if (r.data.size() < sizeof head) throw CollectError(kExitFailure, "short lock class table");
        std::memcpy(&head, r.data.data(), sizeof head);
        if (head.entry_size != sizeof(LockClassEntry) ||
            uint64_t(head.count) * head.entry_size > r.data.size() - sizeof head)
            throw CollectError(kExitAbi, "ABI version mismatch: the guest's lock class table "
                                         "entries are not the layout this collector reads");
        for (uint32_t i = 0; i < head.count; ++i) {
            LockClassEntry e;
            std::memcpy(&e, r.data.data() + sizeof head + size_t(i) * sizeof e, sizeof e);
            if (e.id >= kMaxLockClasses) continue;
            if (names.names.size() <= e.id) names.names.resize(e.id + 1);
            names.names[e.id] = std::string(e.name, strnlen(e.name, sizeof e.name));
        }
    } catch (const CollectError& e) {
        // Counters from the region are still worth printing; an ABI mismatch is not.
        if (e.exit_code() == kExitAbi || !snapshots_from_region()) throw;
        *warning = std::string("lock class names unavailable: ") + e.what();
    }
    return names;
}

std::optional<WorkloadInformation> Session::workload() {
    CallResult r = channel().query(uint32_t(InfoClass::kSpinlabWorkloadInformation), 0, {},
                                   sizeof(WorkloadInformation));
    if (r.status == uint32_t(Status::kInvalidInfoClass)) return std::nullopt;
    if (r.status != uint32_t(Status::kSuccess))
        throw CollectError(kExitFailure, std::string("the guest refused the workload query: ") + status_name(r.status));
    WorkloadInformation w;
    if (r.data.size() != sizeof w)
        throw CollectError(kExitAbi, "the guest's workload information is " + std::to_string(r.data.size()) +
                                         " bytes, expected " + std::to_string(sizeof w));
    std::memcpy(&w, r.data.data(), sizeof w);
    w.name[kWorkloadNameLen - 1] = w.unit[kWorkloadNameLen - 1] = '\0';  // the guest's bytes: bad input until checked
    return w;
}

SystemConfiguration Session::configuration() {
    CallResult r = checked_query(InfoClass::kSpinlabSystemConfiguration, {},
                                 sizeof(SystemConfiguration), "system configuration");
    SystemConfiguration c;
    if (r.data.size() != sizeof c)
        throw CollectError(kExitAbi, "ABI version mismatch: the guest's system configuration "
                                     "is " + std::to_string(r.data.size()) + " bytes, expected " +
                                     std::to_string(sizeof c));
    std::memcpy(&c, r.data.data(), sizeof c);
    if (c.abi_version != kSysinfoAbiVersion)
        throw CollectError(kExitAbi, "ABI version mismatch: the guest speaks sysinfo ABI " +
                                         std::to_string(c.abi_version) + ", this collector " +
                                         std::to_string(kSysinfoAbiVersion));
    return c;
}

}  // namespace spinlab::collect
