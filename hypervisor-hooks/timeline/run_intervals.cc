#include "run_intervals.h"

#include <algorithm>
#include <map>

#include "hypervisor-hooks/common/fs_util.h"

namespace spinlab::load {

namespace {
struct ThreadState {
    const TimelineThread* thread;
    enum { kUnknown, kOn, kOff } state = kUnknown;
    uint64_t since = 0;
    std::string reason;
    int cpu = -1;
    uint64_t seen_on = 0;  // its latest running stamp since `since` (0: none)
    int next_pid = -1;     // off: the task its switch-out gave the CPU to
    std::string next_comm;
};

// Walks the window's events in time order, one thread state per traced thread, and emits each
// interval as it closes.
class IntervalBuilder {
public:
    IntervalBuilder(const std::vector<TimelineThread>& threads, uint64_t window_start, uint64_t window_end)
        : window_start_(window_start), window_end_(window_end) {
        for (const TimelineThread& t : threads)
            by_tid_[t.tid] = ThreadState{&t, ThreadState::kUnknown, 0, "", -1, 0, -1, ""};
    }

    void add(const SchedSwitch& e) {
        uint64_t ts = std::clamp(e.ts, window_start_, window_end_);
        if (e.running_stamp) {
            if (ThreadState* s = traced(e.prev_pid)) seen_running(*s, e, ts);
        } else {
            if (ThreadState* s = traced(e.prev_pid)) switched_out(*s, e, ts);
            if (ThreadState* s = traced(e.next_pid)) switched_in(*s, e, ts);
        }
        last_on_cpu_[e.cpu] = ts;
    }

    // Closes every thread's last interval at the window's end; the intervals by thread, then time.
    std::vector<RunInterval> finish() {
        for (auto& [tid, s] : by_tid_) {
            switch (s.state) {
                case ThreadState::kOn: emit(s, RunState::kOn, s.since, window_end_, "", s.cpu); break;
                case ThreadState::kOff: emit(s, RunState::kOff, s.since, window_end_, s.reason, -1); break;
                case ThreadState::kUnknown:
                    emit(s, s.thread->initial_on.value_or(false) ? RunState::kOn : RunState::kOff, window_start_,
                         window_end_, "no-switch", -1);
                    break;
            }
        }
        std::stable_sort(out_.begin(), out_.end(), [](const RunInterval& a, const RunInterval& b) {
            return a.tid != b.tid ? a.tid < b.tid : a.start < b.start;
        });
        return std::move(out_);
    }

private:
    ThreadState* traced(int tid) {
        auto it = by_tid_.find(tid);
        return it == by_tid_.end() ? nullptr : &it->second;
    }

    // A running stamp of a traced thread.
    void seen_running(ThreadState& s, const SchedSwitch& e, uint64_t ts) {
        if (s.state == ThreadState::kUnknown) {
            // Its first event, and it is on CPU: it was on since the window start, as
            // when its first event switches it out (the interval goes on from here).
            s.state = ThreadState::kOn;
            s.since = window_start_;
        } else if (s.state == ThreadState::kOff) {
            // On CPU now, yet its switch-in is not in the trace: it came after the CPU's
            // last traced event.
            uint64_t busy_until = std::min(last_event_on(e.cpu, s.since), ts);
            emit(s, RunState::kOff, s.since, busy_until, s.reason, -1);
            emit(s, RunState::kUnknown, busy_until, ts, "switch-in not traced", -1);
            s.state = ThreadState::kOn;
            s.since = ts;
        }
        s.cpu = e.cpu;
        s.seen_on = ts;
    }

    void switched_out(ThreadState& s, const SchedSwitch& e, uint64_t ts) {
        switch (s.state) {
            case ThreadState::kOn: emit(s, RunState::kOn, s.since, ts, "", e.cpu); break;
            // Leaving the CPU: it was on since the window start.
            case ThreadState::kUnknown: emit(s, RunState::kOn, window_start_, ts, "", e.cpu); break;
            case ThreadState::kOff: {
                // Out twice: it got this CPU after the CPU's last traced event, at a moment
                // the trace does not show.
                uint64_t busy_until = std::min(last_event_on(e.cpu, s.since), ts);
                emit(s, RunState::kOff, s.since, busy_until, s.reason, -1);
                emit(s, RunState::kUnknown, busy_until, ts, "switch-in not traced", -1);
                break;
            }
        }
        s.state = ThreadState::kOff;
        s.since = ts;
        s.reason = e.prev_state;
        s.next_pid = e.next_pid;
        s.next_comm = e.next_comm;
    }

    void switched_in(ThreadState& s, const SchedSwitch& e, uint64_t ts) {
        switch (s.state) {
            case ThreadState::kOff: emit(s, RunState::kOff, s.since, ts, s.reason, -1); break;
            case ThreadState::kUnknown: emit(s, RunState::kOff, window_start_, ts, "start", -1); break;
            case ThreadState::kOn: {
                // In twice: it left at a moment the trace does not show, after its last
                // running stamp.
                uint64_t ran_until = std::max(s.since, std::min(s.seen_on, ts));
                emit(s, RunState::kOn, s.since, ran_until, "", s.cpu);
                emit(s, RunState::kUnknown, ran_until, ts, "switch-out not traced", -1);
                break;
            }
        }
        s.state = ThreadState::kOn;
        s.since = ts;
        s.cpu = e.cpu;
        s.seen_on = 0;
    }

    void emit(ThreadState& s, RunState state, uint64_t start, uint64_t end, std::string reason, int cpu) {
        if (end <= start) return;
        RunInterval r{s.thread->tid, s.thread->vcpu, state, start, end, reason, cpu};
        // Only an off interval that began at a switch-out of the trace names who took the CPU.
        if (state == RunState::kOff && s.state == ThreadState::kOff && start == s.since) {
            r.preemptor_pid = s.next_pid;
            r.preemptor_comm = s.next_comm;
        }
        out_.push_back(std::move(r));
    }

    // The time of the latest event seen on a CPU before the one being read (not before
    // `not_before`).
    uint64_t last_event_on(int cpu, uint64_t not_before) const {
        auto it = last_on_cpu_.find(cpu);
        return it == last_on_cpu_.end() ? not_before : std::max(not_before, it->second);
    }

    const uint64_t window_start_, window_end_;
    std::map<int, ThreadState> by_tid_;
    std::map<int, uint64_t> last_on_cpu_;
    std::vector<RunInterval> out_;
};
}  // namespace

std::vector<RunInterval> build_run_intervals(const std::vector<SchedSwitch>& events,
                                             const std::vector<TimelineThread>& threads,
                                             uint64_t window_start, uint64_t window_end) {
    if (window_end < window_start) throw LoadError("timeline window ends before it starts");
    std::vector<const SchedSwitch*> sorted;
    for (const SchedSwitch& e : events) sorted.push_back(&e);
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const SchedSwitch* a, const SchedSwitch* b) { return a->ts < b->ts; });
    IntervalBuilder builder(threads, window_start, window_end);
    for (const SchedSwitch* e : sorted) builder.add(*e);
    return builder.finish();
}

std::vector<RunInterval> mark_frozen(const std::vector<RunInterval>& intervals,
                                     const std::vector<FrozenSpan>& spans) {
    std::vector<RunInterval> out;
    for (const RunInterval& r : intervals) {
        // The spans of this thread that overlap r, in time order, clipped to r.
        std::vector<std::pair<uint64_t, uint64_t>> cuts;
        for (const FrozenSpan& f : spans)
            if (f.tid == r.tid && f.stopped < r.end && r.start < f.resumed)
                cuts.push_back({std::max(f.stopped, r.start), std::min(f.resumed, r.end)});
        std::sort(cuts.begin(), cuts.end());
        std::vector<std::pair<uint64_t, uint64_t>> merged;  // overlapping spans make one piece
        for (auto c : cuts) {
            if (!merged.empty() && c.first <= merged.back().second)
                merged.back().second = std::max(merged.back().second, c.second);
            else
                merged.push_back(c);
        }
        uint64_t at = r.start;
        auto piece = [&](RunState state, uint64_t start, uint64_t end) {
            if (end <= start) return;
            RunInterval p = r;
            p.state = state;
            p.start = start;
            p.end = end;
            out.push_back(p);
        };
        for (auto [from, to] : merged) {
            piece(r.state, at, from);
            piece(RunState::kFrozen, from, to);
            at = to;
        }
        piece(r.state, at, r.end);
    }
    return out;
}

namespace {
// A CSV field: quoted, quotes doubled, where it holds a comma, quote or line break (RFC 4180).
std::string csv_field(const std::string& text) {
    if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
    std::string out = "\"";
    for (char ch : text) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return out + "\"";
}
}  // namespace

std::string run_intervals_csv_header() {
    // The columns of the results' timeline object, in its order (hostlib/results_contract.h);
    // format_run_intervals_csv writes a row's fields in the same order.
    std::string header;
#define X(ident) header += std::string(header.empty() ? "" : ",") + results::key::ident;
    SPINLAB_TIMELINE_COLUMNS(X)
#undef X
    return header + "\n";
}

std::string format_run_intervals_csv(const std::vector<RunInterval>& intervals, const TimelineLabel& label,
                                     const std::function<uint64_t(uint64_t)>& to_ns) {
    std::string csv;
    for (const RunInterval& r : intervals) {
        csv += std::to_string(r.vcpu) + "," + std::to_string(r.tid) + "," + run_state_name(r.state) + "," +
               std::to_string(r.start) + "," + std::to_string(r.end) + "," + label.phase + "," +
               std::to_string(label.rep) + ",";
        if (to_ns) csv += std::to_string(to_ns(r.start)) + "," + std::to_string(to_ns(r.end));
        else csv += ",";
        csv += "," + r.reason + "," + std::to_string(r.cpu) + ",";
        if (r.state != RunState::kOn) csv += spinlab::preemptor_class_name(r.preemptor);
        csv += "," + r.preemptor_vm + "," + (r.preemptor_vcpu >= 0 ? std::to_string(r.preemptor_vcpu) : "") + "," +
               (r.preemptor_pid >= 0 ? std::to_string(r.preemptor_pid) : "") + "," + csv_field(r.preemptor_comm) +
               "\n";
    }
    return csv;
}

}  // namespace spinlab::load
