// The kernel's perf switch records of some threads: every time a thread gets a CPU and every
// time it leaves one, from perf_event_open(2) (a software dummy event per thread with
// `context_switch`, PERF_RECORD_SWITCH), independent of the sched:sched_switch tracepoint.
//
// Why a second source: sched_switch is emitted in the context of the task that leaves the CPU.
// A host kernel can drop every event emitted in the process context of some of its tasks (seen
// on these machines, kernel 6.18: no event with common_pid of the sandbox agent's
// `tokio-rt-worker` threads is ever recorded unless it comes from a hard interrupt, in any
// tracefs instance, filtered or not), so a thread that gets the CPU from one of them has no
// switch-in in the trace. The perf switch-in record is written by the thread that gets the CPU,
// in its own context (perf_event_task_sched_in, in finish_task_switch), and the switch-out record
// in its own context too, so both are there whoever ran before or after.
//
// Times are CLOCK_MONOTONIC_RAW ns (perf's `use_clockid`): with the TSC as clocksource that is a
// fixed linear function of the TSC, so mapping them onto the trace's x86-tsc clock through two
// (raw, TSC) pairs is exact to tens of ns. A record says which CPU and whether the thread was
// preempted (still runnable) when it left, not whether it slept or was frozen (the tracepoint's
// prev_state does).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace spinlab::load {

// One switch of one thread.
struct SwitchRecord {
    int tid = 0;
    uint64_t ts = 0;  // CLOCK_MONOTONIC_RAW ns when read, the trace clock once mapped
    int cpu = -1;
    bool in = false;       // got the CPU (else: left it)
    bool preempt = false;  // left the CPU still runnable (switch-outs only)
};

// Decodes the records in `data` (the bytes of a perf ring buffer between tail and head, in
// order, wrap-around already undone) of a per-thread event opened with sample_id_all and
// sample_type TID|TIME|CPU. Switch records are appended to `out`; the count of records the
// kernel reports lost (PERF_RECORD_LOST) is added to `lost`; other record types are skipped.
// Returns the bytes consumed (whole records only: a record cut at the end waits for the next
// read). Throws LoadError on a record whose size is impossible. Pure: no I/O.
size_t decode_switch_records(const unsigned char* data, size_t size, std::vector<SwitchRecord>& out,
                             uint64_t& lost);

// The perf events of a set of threads, one ring buffer each. Opening fails for the whole set
// (nothing kept) with a LoadError naming the thread and the reason, e.g. EACCES under
// perf_event_paranoid without CAP_PERFMON, or a seccomp filter in a container.
class SwitchRecorder {
public:
    explicit SwitchRecorder(const std::vector<int>& tids);
    ~SwitchRecorder();
    SwitchRecorder(const SwitchRecorder&) = delete;
    SwitchRecorder& operator=(const SwitchRecorder&) = delete;

    void enable();
    void disable();
    // Moves every complete record out of the ring buffers into records() (call at least every
    // few hundred ms: each buffer holds about 16,000 switches; beyond, the kernel counts them
    // lost).
    void drain();
    const std::vector<SwitchRecord>& records() const { return records_; }
    // The records drained so far, handed over (the recorder keeps none).
    std::vector<SwitchRecord> take_records() { return std::exchange(records_, {}); }
    uint64_t lost() const { return lost_; }

private:
    struct Ring {
        int tid;
        int fd;
        void* map;
        size_t map_size;
    };
    void release();  // unmaps and closes every ring
    std::vector<Ring> rings_;
    std::vector<SwitchRecord> records_;
    uint64_t lost_ = 0;
};

}  // namespace spinlab::load
