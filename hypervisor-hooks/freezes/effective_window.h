// A freeze's effective window: when the thread really stopped and when it really ran again,
// read from its own sched_switch events (host TSC), not from when we asked.
//
// A freeze request only marks the thread; it stops at its next kernel entry (v2: IPI, then the
// signal-delivery path; v1: the freezer's fake signal), and after a thaw request it runs again
// only once a CPU picks it. The mark lands somewhere inside the freeze write, and that write
// can take long: v1 patches a static key (freezer_active) on every first freeze and last thaw,
// which waits for every CPU (up to 2 ms measured; v2's write took 12 ms once). So, for a freeze write issued at `begin`
// and returned at `marked`, and a thaw write issued at `thaw` (all TSC):
//
//   stopped = if the thread was off CPU at `marked`: the later of `begin` and its last switch-out
//             before `marked` (it may have run user code until then, if it got a CPU during the
//             write; afterwards, marked and waiting for a CPU, it can only take the kernel's path
//             into the freezer when it gets one, 6-25 us measured, and switch out again);
//             if it was on CPU at `marked`: its first switch-out after `marked`;
//   resumed = the thread's first switch-in after `thaw`; or `thaw` itself when the thread was on
//             CPU then: it had been marked all along, so it was on that kernel path (seen: it got
//             a CPU 7 us before a thaw, after waiting 6.6 ms) and returns to user space once the
//             thaw lands.
//
// A switch-in the trace does not have (two switch-outs in a row; see run_intervals.h) makes the
// thread's state between them unknown; it counts as on CPU for both ends, so the window is
// never wider than the trace proves. One exception, where the kernel proves more: the thread's
// last switch before `marked` is a switch-out, it has no switch-out between `marked` and the
// thaw, and the kernel reported the freeze complete before the thaw. Had an untraced switch-in
// let it run, it could only have frozen through a switch-out (switch-outs are traced) before
// the thaw; so it was off from that last switch-out on (seen: it switched out into the freezer
// during a 184 us freeze write, and the thaw's switch-in was not traced: 1 freeze in ~100).
//
// The kernel's own perf switch-in records of the thread (switch_records.h), when given, fill
// those holes first: a recorded switch-in whose last traced switch before it is a switch-out
// (or that comes before the thread's first traced switch, a switch-out) is a switch-in the trace
// lacks, and counts as traced. They must be read before the trace they are matched with, so
// that the trace already holds every switch-in that the kernel did emit before them.
//
// Inside [stopped, resumed) the thread runs no user code (no guest code for a vCPU); it may be
// on CPU only on that kernel path. Statuses:
//   ok             both ends known;
//   never-stopped  the thread was on CPU from `marked` through `thaw` without a switch: the freeze
//                  never took effect (stopped = resumed = 0);
//   not-resumed    no switch-in after `thaw` before tracing ended (resumed = 0);
//   no-events      no event of the thread at all around the window (state unknown; both 0).
// Pure: no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hypervisor-hooks/timeline/sched_switch_parse.h"

namespace spinlab::load {

enum class EffectiveStatus { kOk, kNeverStopped, kNotResumed, kNoEvents };
const char* effective_status_name(EffectiveStatus s);

struct EffectiveWindow {
    EffectiveStatus status = EffectiveStatus::kNoEvents;
    uint64_t stopped = 0;  // TSC; 0 when unknown
    uint64_t resumed = 0;  // TSC; 0 when unknown
};

// One thread's switch events, kept in time order; answers effective windows.
class ThreadSwitches {
public:
    explicit ThreadSwitches(int tid) : tid_(tid) {}
    int tid() const { return tid_; }
    // Keeps the events that concern this thread (any order; they are sorted by time).
    void add(const std::vector<SchedSwitch>& events);
    // Keeps perf's switch-in records of this thread (TSC; any order), to fill the trace's holes.
    void add_recorded_ins(const std::vector<uint64_t>& tsc);
    // Whether a switch-in after `thaw` has been seen (the window can be finished).
    bool resumed_after(uint64_t thaw) const;
    // Call once resumed_after(thaw), or when tracing has ended (then: not-resumed). `frozen`:
    // when the kernel reported the freeze complete (cgroup.events frozen 1, v1 FROZEN), 0 if
    // it did not before the thaw.
    EffectiveWindow window(uint64_t begin, uint64_t marked, uint64_t thaw, uint64_t frozen = 0) const;
    // Forgets events before `tsc` (windows before it are finished), keeping the last one.
    void drop_before(uint64_t tsc);

private:
    struct Switch {
        uint64_t ts;
        bool in;  // switched in (next_pid == tid) or out (prev_pid == tid)
    };
    // The traced switches with the recorded switch-ins the trace lacks inserted, in time order.
    std::vector<Switch> filled() const;
    int tid_;
    std::vector<Switch> switches_;
    std::vector<uint64_t> recorded_ins_;  // sorted
};

}  // namespace spinlab::load
