#include "untraced_switches.h"

#include <algorithm>
#include <optional>

namespace spinlab::load {

namespace {
enum class Side { kNone, kIn, kOut };  // kNone: a window edge, not a traced switch

struct Edge {
    uint64_t ts;
    Side side;
};

// The thread's traced switches in time order.
std::vector<Edge> traced_edges(const std::vector<SchedSwitch>& traced, int tid) {
    std::vector<Edge> edges;
    for (const SchedSwitch& e : traced) {
        if (e.running_stamp) continue;
        if (e.prev_pid == tid) edges.push_back({e.ts, Side::kOut});
        if (e.next_pid == tid) edges.push_back({e.ts, Side::kIn});
    }
    std::stable_sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.ts < b.ts; });
    return edges;
}

SchedSwitch as_event(const SwitchRecord& r) {
    SchedSwitch e;
    e.ts = r.ts;
    e.cpu = r.cpu;
    e.prev_pid = r.in ? kUntracedPid : r.tid;
    e.next_pid = r.in ? r.tid : kUntracedPid;
    e.prev_state = r.in ? "" : r.preempt ? "R" : "blocked";
    return e;
}

// Which switch is missing between two neighbours: a switch-in when either side leaves the CPU
// (out-out, edge-out, out-edge), a switch-out when either enters it; none when they alternate.
std::optional<bool> missing_in(Side left, Side right) {
    if (left == Side::kOut && right == Side::kIn) return std::nullopt;
    if (left == Side::kIn && right == Side::kOut) return std::nullopt;
    if (left == Side::kOut || right == Side::kOut) return true;
    return false;  // in-in, edge-in, in-edge
}
}  // namespace

AddedSwitches untraced_switches(const std::vector<SchedSwitch>& traced, const std::vector<SwitchRecord>& records,
                                const std::vector<int>& tids, uint64_t window_start, uint64_t window_end) {
    AddedSwitches added;
    auto add = [&](const SwitchRecord& r) {
        added.events.push_back(as_event(r));
        ++(r.in ? added.switch_ins : added.switch_outs);
    };
    for (int tid : tids) {
        std::vector<SwitchRecord> own;  // the thread's records inside the window, in time order
        for (const SwitchRecord& r : records)
            if (r.tid == tid && r.ts >= window_start && r.ts <= window_end) own.push_back(r);
        std::stable_sort(own.begin(), own.end(),
                         [](const SwitchRecord& a, const SwitchRecord& b) { return a.ts < b.ts; });
        const std::vector<Edge> edges = traced_edges(traced, tid);
        if (edges.empty()) {
            for (const SwitchRecord& r : own) add(r);
            continue;
        }
        for (size_t i = 0; i <= edges.size(); ++i) {
            const Edge left = i > 0 ? edges[i - 1] : Edge{window_start, Side::kNone};
            const Edge right = i < edges.size() ? edges[i] : Edge{window_end, Side::kNone};
            const std::optional<bool> want_in = missing_in(left.side, right.side);
            if (!want_in) continue;
            // Strictly between two traced switches; a window edge itself may hold one.
            auto inside = [&](const SwitchRecord& r) {
                return (left.side == Side::kNone ? r.ts >= left.ts : r.ts > left.ts) &&
                       (right.side == Side::kNone ? r.ts <= right.ts : r.ts < right.ts) && r.in == *want_in;
            };
            // The last switch-in (it entered then and stayed), the first switch-out (it left then).
            if (*want_in) {
                auto it = std::find_if(own.rbegin(), own.rend(), inside);
                if (it != own.rend()) add(*it);
            } else {
                auto it = std::find_if(own.begin(), own.end(), inside);
                if (it != own.end()) add(*it);
            }
        }
    }
    return added;
}

}  // namespace spinlab::load
