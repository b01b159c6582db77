#include "effective_window.h"

#include <algorithm>

namespace spinlab::load {

const char* effective_status_name(EffectiveStatus s) {
    switch (s) {
        case EffectiveStatus::kOk: return "ok";
        case EffectiveStatus::kNeverStopped: return "never-stopped";
        case EffectiveStatus::kNotResumed: return "not-resumed";
        case EffectiveStatus::kNoEvents: return "no-events";
    }
    return "?";
}

void ThreadSwitches::add(const std::vector<SchedSwitch>& events) {
    size_t before = switches_.size();
    for (const SchedSwitch& e : events) {
        // A thread switching to itself is not an event; both sides can name it otherwise.
        if (e.prev_pid == tid_ && e.next_pid != tid_) switches_.push_back({e.ts, false});
        if (e.next_pid == tid_ && e.prev_pid != tid_) switches_.push_back({e.ts, true});
    }
    // trace_pipe merges the per-CPU buffers in time order, but two reads may interleave them.
    if (switches_.size() != before) {
        std::stable_sort(switches_.begin(), switches_.end(),
                         [](const Switch& a, const Switch& b) { return a.ts < b.ts; });
    }
}

void ThreadSwitches::add_recorded_ins(const std::vector<uint64_t>& tsc) {
    recorded_ins_.insert(recorded_ins_.end(), tsc.begin(), tsc.end());
    std::sort(recorded_ins_.begin(), recorded_ins_.end());
}

std::vector<ThreadSwitches::Switch> ThreadSwitches::filled() const {
    if (recorded_ins_.empty() || switches_.empty()) return switches_;
    std::vector<Switch> out;
    auto traced = switches_.begin();
    for (uint64_t r : recorded_ins_) {
        while (traced != switches_.end() && traced->ts <= r) out.push_back(*traced++);
        // The switch before it (traced or filled) left the CPU, or there is none and the next
        // traced one leaves it: the trace lacks this switch-in.
        const bool after_out = out.empty() ? traced != switches_.end() && !traced->in : !out.back().in;
        if (after_out) out.push_back({r, true});
    }
    out.insert(out.end(), traced, switches_.end());
    return out;
}

bool ThreadSwitches::resumed_after(uint64_t thaw) const {
    const std::vector<Switch> switches = filled();
    return std::any_of(switches.begin(), switches.end(), [&](const Switch& s) { return s.in && s.ts > thaw; });
}

EffectiveWindow ThreadSwitches::window(uint64_t begin, uint64_t marked, uint64_t thaw, uint64_t frozen) const {
    EffectiveWindow w;
    const std::vector<Switch> sw = filled();  // the traced ones, holes filled
    if (sw.empty()) return w;  // no-events
    // Whether the thread was on CPU at `t`: its last switch at or before t says so; without
    // one, the opposite of its first switch after t does (an off thread's next switch is in).
    auto first_after = [&](uint64_t t) {
        return std::upper_bound(sw.begin(), sw.end(), t,
                                [](uint64_t v, const Switch& s) { return v < s.ts; });
    };
    // A switch-out followed by another switch-out means a switch-in the kernel did not trace
    // happened between (some host kernels never trace a switch away from some of their own
    // tasks): the thread may have been on CPU at t, and counts as on, so that a freeze starts
    // no earlier and ends no later than the trace proves (the timeline marks that time unknown).
    auto on_at = [&](uint64_t t) {
        auto after = first_after(t);
        if (after == sw.begin()) return !after->in;
        if ((after - 1)->in) return true;
        return after != sw.end() && !after->in;
    };
    auto after_marked = first_after(marked);
    auto out = std::find_if(after_marked, sw.end(), [](const Switch& s) { return !s.in; });
    const bool out_before_thaw = out != sw.end() && out->ts <= thaw;
    // The one case where the kernel's report settles an unknown state (header): off since the
    // last switch-out before `marked`.
    const bool kernel_says_off = frozen != 0 && frozen <= thaw && !out_before_thaw &&
                                 after_marked != sw.begin() && !(after_marked - 1)->in;
    if (on_at(marked) && !kernel_says_off) {
        if (!out_before_thaw) {
            w.status = EffectiveStatus::kNeverStopped;
            return w;
        }
        w.stopped = out->ts;
    } else {
        // Off at `marked`: the switch before it is its last switch-out (if we saw one).
        w.stopped = after_marked != sw.begin() ? std::max(begin, (after_marked - 1)->ts) : begin;
    }
    w.status = EffectiveStatus::kOk;
    if (on_at(thaw)) {
        w.resumed = thaw;
        return w;
    }
    auto in = std::find_if(first_after(thaw), sw.end(), [](const Switch& s) { return s.in; });
    if (in == sw.end()) {
        w.status = EffectiveStatus::kNotResumed;
        return w;
    }
    w.resumed = in->ts;
    return w;
}

void ThreadSwitches::drop_before(uint64_t tsc) {
    // Later windows begin after `tsc`: they need the state at their begin, which the last
    // event before `tsc` still gives.
    auto first_kept = std::lower_bound(switches_.begin(), switches_.end(), tsc,
                                       [](const Switch& s, uint64_t t) { return s.ts < t; });
    if (first_kept != switches_.begin()) --first_kept;  // it gives the state at `tsc`
    if (first_kept != switches_.end()) {
        // Recorded switch-ins before the first kept switch can fill no hole any more.
        const uint64_t from = first_kept->ts;
        recorded_ins_.erase(recorded_ins_.begin(), std::lower_bound(recorded_ins_.begin(), recorded_ins_.end(), from));
    }
    switches_.erase(switches_.begin(), first_kept);
}

}  // namespace spinlab::load
