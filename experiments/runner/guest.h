// experiments/runner/guest.h: the runner's view of a running guest, through the collector's
// library: the shared region (counters, clock publications; read without disturbing the guest)
// and the control channel (reset, lock class names, configuration, trace sessions).
#pragma once
#include <spinlab/sysinfo.h>
#include <spinlab/trace.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "clock_sync.h"
#include "results.h"
#include "collector/session.h"

namespace spinlab::run {

class Guest {
public:
    // Attaches to the VM NAME in `run_dir` (empty: spinlab::run_dir(), hostlib/run_dir.h).
    // `channel_timeout_s`: how long one channel request may take ([vm] channel-timeout).
    Guest(const std::string& vm_name, const std::string& run_dir, double channel_timeout_s);

    // Waits until the guest has laid its region out and answers on the channel, checking the
    // ABI versions of both. `alive` is polled: once it says no, waiting stops; so is `expired`,
    // which says "" while the wait may go on, else why not ("within 60 s (...)": BootWatch).
    // Throws collect::CollectError: kExitAbi on a version mismatch, kExitNoVm when the guest did
    // not become ready in time or died.
    void wait_ready(const std::function<std::string()>& expired, const std::function<bool()>& alive);
    // How long one channel request may take from now on.
    void set_channel_timeout(double seconds) {
        session_.set_channel_timeout(std::chrono::milliseconds(long(seconds * 1000)));
    }

    const SystemConfiguration& configuration() const { return config_; }
    uint64_t tsc_hz() const;  // the region header's, else the configuration's

    void reset_counters();                   // every CPU, every class
    // The guest's own count of its workload's operations (a Linux guest's agent); nullopt from
    // a guest that does not keep one (spinlab's kernel: throughput-classes count instead).
    std::optional<WorkloadInformation> workload() { return session_.workload(); }
    collect::Snapshot snapshot();            // from the region
    collect::ClassNames class_names();       // asked again each time: workloads register late
    std::optional<uint64_t> guest_tsc_now();  // the latest clock publication
    std::optional<collect::ClockSample> clock_sample();
    // Trace sessions (class 0x1F): start with `params` (throws std::runtime_error saying why the
    // guest refused, naming the [trace] key where one is to blame) and stop (throws
    // collect::CollectError when the guest refuses or does not answer).
    void start_trace(const TraceSessionInformation& params, const TraceStackInformation& stacks);
    void stop_trace();
    const std::string& region_path() { return session_.region().path(); }
    // The region file was removed (the VM is gone).
    bool region_gone();

private:
    collect::Session session_;
    SystemConfiguration config_{};
    uint32_t cpus_ = 0;
};

}  // namespace spinlab::run
