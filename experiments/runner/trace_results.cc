// experiments/runner/trace_results.cc: see trace_results.h.
#include "trace_results.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <numeric>
#include <stdexcept>
#include <tuple>

#include "locktrace/buffer_parser.h"
#include "locktrace/drain.h"
#include "locktrace/trace_file.h"

namespace spinlab::run {

namespace lt = locktrace;

LongWaitEntry long_wait_from_event(const TraceSpinlockEvent& e, const collect::ClassNames& names) {
    LongWaitEntry w;
    w.cpu = e.h.cpu;
    w.lock_class = names.name(e.class_id);
    // The event is written at release; the wait ended when the lock was taken.
    w.wait_cycles = e.wait_cycles;
    w.start_tsc = e.acquire_tsc >= e.wait_cycles ? e.acquire_tsc - e.wait_cycles : 0;
    if (e.holder_cpu_start != kNoCpu) w.holder_cpu = e.holder_cpu_start;
    if (e.holder_cpu_end != kNoCpu) w.holder_end_cpu = e.holder_cpu_end;
    w.lhp_class = e.lhp_class < kLhpClassCount ? e.lhp_class : uint32_t(LhpClass::kUnknown);
    w.holder_steal_ns = e.holder_steal_ns;
    w.waiter_steal_ns = e.waiter_steal_ns;
    return w;
}

TracedHold traced_hold(const TraceSpinlockEvent& e) {
    return {e.lock_address, e.class_id, e.h.cpu, e.acquire_tsc, e.release_tsc, e.wait_cycles,
            e.holder_cpu_start, e.holder_cpu_end,
            (e.flags & kTraceSpinHandoversCounted) ? int(e.handovers) : -1,
            (e.flags & kTraceSpinHandoversCounted) && (e.flags & kTraceSpinWaiterCpuTookNone)};
}

namespace {

uint64_t wait_start(const TracedHold& h) { return h.acquire_tsc >= h.wait_cycles ? h.acquire_tsc - h.wait_cycles : 0; }

bool same_lock(const TracedHold& a, const TracedHold& b) { return a.lock == b.lock && a.class_id == b.class_id; }

// Whether the hold just before sorted[i] (by acquire time, on the same lock) is the one that
// handed the lock to it: by the CPU it names as holder_cpu_end, released during its wait.
bool handed_over(const std::vector<TracedHold>& sorted, size_t i) {
    const TracedHold& c = sorted[i];
    return c.holder_cpu_end != kNoCpu && i > 0 && same_lock(sorted[i - 1], c) &&
           sorted[i - 1].cpu == c.holder_cpu_end && sorted[i - 1].release_tsc >= wait_start(c);
}

// Whether every hold of the lock during the wait was holder_cpu_end's, by the guest's counts
// rather than the stamps. (A holder stopped between its win and its stamp, by the guest or the
// host, stamps late: its hold then seems to begin inside the wait, handed over by whoever
// released before it, often the waiter's own CPU: a hand-over that never was, at an unknown
// moment.)
bool one_holder_throughout(const TracedHold& wait, uint32_t guest_cpus) {
    const uint32_t end = wait.holder_cpu_end;
    if (wait.holder_cpu_start != kNoCpu && wait.holder_cpu_start != end) return false;
    // no hold began during the wait: the hold it waited behind from the start let go to it
    if (wait.handovers == 0) return true;
    // Two CPUs, and the waiter's took no lock of the class while it waited and held none at the
    // start: whatever holds began, each was the other CPU's.
    return wait.handovers > 0 && wait.waiter_cpu_took_none && guest_cpus == 2 && end != wait.cpu;
}

// The chain of one wait, `at` its position in `sorted` (holds by lock, then acquire time).
std::vector<HoldLink> chain_of(const std::vector<TracedHold>& sorted, size_t at, uint32_t guest_cpus) {
    const TracedHold& wait = sorted[at];
    const uint64_t start = wait_start(wait);
    if (wait.holder_cpu_end == kNoCpu) return {};
    if (one_holder_throughout(wait, guest_cpus)) return {{wait.holder_cpu_end, std::nullopt}};
    std::vector<HoldLink> back;  // from the last holder to the first
    bool complete = false;
    for (size_t cur = at;;) {
        if (!handed_over(sorted, cur)) {  // the hold that handed the lock to cur was not traced
            back.push_back({sorted[cur].holder_cpu_end, std::nullopt});
            break;
        }
        const size_t pi = cur - 1;
        const TracedHold& p = sorted[pi];
        // the lock became p's when the hold before it let go, else (not traced) by p's own stamp
        const uint64_t from = handed_over(sorted, pi) ? sorted[pi - 1].release_tsc : p.acquire_tsc;
        back.push_back({p.cpu, from});
        if (from <= start) {  // the holder when the wait began
            complete = true;
            break;
        }
        if (p.holder_cpu_end == kNoCpu) break;  // taken uncontended: who held it before is not known
        cur = pi;
    }
    if (!complete && wait.holder_cpu_start != kNoCpu && back.back().cpu != wait.holder_cpu_start)
        back.push_back({wait.holder_cpu_start, std::nullopt});
    return {back.rbegin(), back.rend()};
}

}  // namespace

std::vector<std::vector<HoldLink>> hand_over_chains(const std::vector<TracedHold>& holds,
                                                    const std::vector<size_t>& waits, uint32_t guest_cpus) {
    std::vector<size_t> order(holds.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        const TracedHold &x = holds[a], &y = holds[b];
        return std::tie(x.lock, x.class_id, x.acquire_tsc, x.cpu) < std::tie(y.lock, y.class_id, y.acquire_tsc, y.cpu);
    });
    std::vector<TracedHold> sorted(holds.size());
    std::vector<size_t> position(holds.size());
    for (size_t i = 0; i < order.size(); ++i) {
        sorted[i] = holds[order[i]];
        position[order[i]] = i;
    }
    std::vector<std::vector<HoldLink>> out;
    out.reserve(waits.size());
    for (size_t w : waits) out.push_back(chain_of(sorted, position.at(w), guest_cpus));
    return out;
}

TraceRecord read_trace_file(const std::string& path, const std::string& file,
                            const collect::ClassNames& names, LongWaits* long_waits) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read the trace file " + path);
    const std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)), {});
    TraceFileHeader fh;
    if (const lt::FileError e = lt::parse_file_header(data.data(), data.size(), &fh); e != lt::FileError::kNone)
        throw std::runtime_error("trace file " + path + ": " + lt::file_error_name(e));
    TraceRecord r;
    r.file = file;
    r.session = fh.session;
    size_t off = sizeof fh;
    std::vector<TracedHold> holds;  // every spinlock event, for placing hand-overs
    std::vector<size_t> waits;      // the long waits among them
    std::vector<LongWaitEntry> found;
    lt::FrameView f;
    lt::FileError e;
    while ((e = lt::next_frame(data.data(), data.size(), &off, &f)) == lt::FileError::kNone) {
        if (f.kind == TraceFrameKind::kCounters) {
            r.cpus.clear();
            r.totals = {};
            for (uint32_t i = 0; i + sizeof(TraceCpuCounters) <= f.length; i += sizeof(TraceCpuCounters)) {
                TraceCpuCounters k;
                std::memcpy(&k, f.payload + i, sizeof k);
                r.cpus.push_back(k);
                lt::add_loss(r.totals, k.counters);
            }
            r.counters_found = true;
            continue;
        }
        lt::BufferView v;
        if (lt::parse_buffer(f.payload, f.length, &v) != lt::BufferError::kNone) {
            r.damaged_frames++;
            continue;
        }
        r.buffers++;
        lt::for_each_event(v, [&](const TraceEventHeader& h, const uint8_t* ev) {
            r.events++;
            if (h.type != uint16_t(TraceEventType::kSpinlock) || long_waits == nullptr) return;
            TraceSpinlockEvent s;
            std::memcpy(&s, ev, sizeof s);
            if (s.rules & kTraceRuleLongWait) {
                waits.push_back(holds.size());
                found.push_back(long_wait_from_event(s, names));
            }
            holds.push_back(traced_hold(s));
        });
    }
    if (e != lt::FileError::kEnd) r.damaged_frames++;  // a tail cut short: what came before counts
    if (long_waits) {
        // the session's counters name every CPU of the guest
        std::vector<std::vector<HoldLink>> chains = hand_over_chains(holds, waits, uint32_t(r.cpus.size()));
        for (size_t i = 0; i < found.size(); ++i) found[i].holds = std::move(chains[i]);
        long_waits->entries.insert(long_waits->entries.end(), found.begin(), found.end());
        long_waits->dropped += r.totals.events_lost;
    }
    return r;
}


}  // namespace spinlab::run
