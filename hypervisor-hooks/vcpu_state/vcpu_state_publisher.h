// Who keeps the vCPU state words (vcpu_state_writer.h) up to date, and how late they are.
//
// Switches (`timeline --vcpu-state REGION`): a thread of its own reads the vCPU threads' perf
// switch records (switch_records.h; a ring per thread of its own, so the timeline's 250 ms
// reader is not disturbed) every --vcpu-state-period-us (1 ms by default) and writes each
// thread's newest switch: switched out still runnable -> kVcpuOffPreempted, switched out
// otherwise (slept, waited, frozen) -> kVcpuOffBlocked, switched in -> 0. The word is written
// AFTER the switch, by a thread that polls: never in the switch. Why poll and not wake per
// record: a publisher woken by a vCPU thread's switch-in preempts a vCPU thread, whose
// switch wakes it again (the feedback loop README.md describes for the trace reader). A poll
// costs one wake-up per period whatever the switch rate.
//   Latency of a published switch = CLOCK_MONOTONIC_RAW just after the store - the record's
//   time (the switch itself, in the kernel's context switch). Switches superseded by a later
//   switch of the same thread within one poll are counted, never written: the word shows only
//   states that outlived a poll period.
//   Until a thread's first switch its word says running (0).
//
// Freezes (`freeze --vcpu-state REGION`, freeze_command.cc): kVcpuOffFrozen is set right after the
// freeze write returns (the thread is marked frozen; one still on its CPU stops at its next
// kernel entry, 0.03-0.3 ms later) and cleared right after the thaw write returns (the thread
// may still wait for a CPU: with a timeline publisher beside it the switch bits say so).
// Latency = store - the freeze or thaw request.
//
// Everything stops with the command (SIGINT/SIGTERM/SIGHUP, parent death: the wait loop
// returns, stop() joins the thread, the writer clears its bits). After a SIGKILL the bits
// stay as they were until the next writer attaches or the guest reboots.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "hypervisor-hooks/targets/thread_targets.h"
#include "hypervisor-hooks/timeline/switch_records.h"
#include "vcpu_state_writer.h"

namespace spinlab::load {

// The bits a switch means for the thread's vCPU.
uint32_t switch_off_bits(const SwitchRecord& r);

// Store latencies and counts of one publisher, and their JSON ({"source":..,"latency_us":{..}}).
struct PublishStats {
    std::string source;      // "switches" or "freezes"
    uint32_t period_us = 0;  // the poll period (switches only)
    uint64_t events = 0;     // switches read, or freeze/thaw requests
    uint64_t published = 0;  // stores, each with a latency sample
    uint64_t superseded = 0; // switches followed by another of the same thread within one poll
    uint64_t unchanged = 0;  // newest switch already matched the word (e.g. out, in, out)
    uint64_t not_attached = 0;  // changes made while the region was not laid out or refused
    uint64_t late_polls = 0;    // polls that woke more than one period late
    uint64_t lost_records = 0;  // perf switch records the kernel lost (a word may miss a switch)
    std::vector<double> latency_us;
    std::string json(const std::string& region) const;
    std::string summary() const;  // one line: counts, median / p99 / max in us
};

// The switch logic, without threads or perf: applies batches of records to a writer.
class SwitchPublishing {
public:
    SwitchPublishing(VcpuStateWriter& writer, const std::vector<ThreadTarget>& targets);
    // One poll's records (any order, several threads): per thread the newest is written; `now`
    // gives CLOCK_MONOTONIC_RAW ns (the records' clock) just after each store.
    template <typename Now>
    void apply(const std::vector<SwitchRecord>& batch, Now now);
    PublishStats& stats() { return stats_; }
    const PublishStats& stats() const { return stats_; }

private:
    bool publish(const SwitchRecord& newest);  // true when it stored
    VcpuStateWriter& writer_;
    std::map<int, uint32_t> vcpu_of_;  // tid -> vCPU index
    PublishStats stats_;
};

// The switches publisher of `timeline --vcpu-state`: its own perf switch records and a thread
// that polls them every period_us.
class SwitchPublisher {
public:
    // Opens the region file and the perf events; throws LoadError naming what failed (a
    // missing file, a symbolic link, perf refused: the word needs the switch records).
    SwitchPublisher(const std::string& region, const std::vector<ThreadTarget>& targets, uint32_t period_us);
    ~SwitchPublisher();  // stop()
    SwitchPublisher(const SwitchPublisher&) = delete;
    SwitchPublisher& operator=(const SwitchPublisher&) = delete;
    void start();
    // Stops and joins the thread, clears the words (idempotent).
    void stop();
    // After stop(): what was published; and why the thread stopped early ("" if it did not).
    const PublishStats& stats() const { return publishing_.stats(); }
    const std::string& error() const { return error_; }
    const VcpuStateWriter& writer() const { return writer_; }

private:
    void run();
    VcpuStateWriter writer_;
    SwitchRecorder recorder_;
    SwitchPublishing publishing_;
    uint32_t period_us_;
    std::thread thread_;
    std::atomic<bool> stop_{false};
    std::string error_;
    VcpuStateWriter::State last_state_ = VcpuStateWriter::State::kWaiting;
};

// The vCPU indexes of some targets, for a VcpuStateWriter.
std::vector<uint32_t> vcpu_indexes(const std::vector<ThreadTarget>& targets);

template <typename Now>
void SwitchPublishing::apply(const std::vector<SwitchRecord>& batch, Now now) {
    std::map<int, const SwitchRecord*> newest;
    for (const SwitchRecord& r : batch) {
        ++stats_.events;
        const SwitchRecord*& n = newest[r.tid];
        if (n && n->ts > r.ts) {
            ++stats_.superseded;
            continue;
        }
        if (n) ++stats_.superseded;
        n = &r;
    }
    for (const auto& [tid, r] : newest) {
        if (publish(*r)) stats_.latency_us.push_back((double(now()) - double(r->ts)) / 1e3);
    }
}

}  // namespace spinlab::load
