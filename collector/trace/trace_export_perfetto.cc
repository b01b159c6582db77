// collector/trace/trace_export_perfetto.cc: see trace_export_perfetto.h.
#include "trace_export_perfetto.h"

#include <spinlab/perfdata.h>
#include <spinlab/sysinfo.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "hostlib/error.h"
#include "hostlib/json_writer.h"
#include "locktrace/buffer_parser.h"

namespace spinlab::collect {
namespace {

constexpr int kPidCpus = 1, kPidThreads = 2, kPidHost = 3;
// Waits with no thread (thread_id 0: interrupt or scheduler context) go on a track per CPU, so
// waits of different CPUs never overlap on one track.
constexpr int64_t kNoThreadTrack = 1000000000;

template <class E>
E load(const uint8_t* ev) {
    E e;
    std::memcpy(&e, ev, sizeof e);
    return e;
}

struct Event {
    TraceEventHeader h;
    const uint8_t* bytes;
};

class Emitter {
public:
    // The axis counts host TSC at the host's rate when there is a correlation, else guest TSC
    // at the guest's (the two rates differ: each side calibrates its own, ~73 ppm apart here).
    Emitter(const LoadedTrace& t, const ClockFit* clock)
        : t_(t), clock_(clock), axis_hz_(clock ? clock->host_tsc_hz : t.header.tsc_hz) {
        j_.begin_object().key("traceEvents").begin_array();
    }
    double guest_us(uint64_t tsc) const {
        const uint64_t host = clock_ ? map_guest(*clock_, tsc).host_tsc : tsc;
        return axis_us(host);
    }
    double host_us(uint64_t tsc) const { return axis_us(tsc); }  // only with a correlation

    void meta(int pid, int64_t tid, const char* what, const std::string& name) {
        j_.begin_object().field("ph", "M").field("pid", pid).field("tid", tid).field("name", what)
            .key("args").begin_object().field("name", name).end_object().end_object();
    }
    void sort_index(int pid, int index) {
        j_.begin_object().field("ph", "M").field("pid", pid).field("tid", int64_t(0))
            .field("name", "process_sort_index").key("args").begin_object()
            .field("sort_index", index).end_object().end_object();
    }
    // Opens an "X" event; the caller may add fields and must call end().
    JsonWriter& complete(int pid, int64_t tid, const std::string& name, const char* cat,
                         double ts, double dur) {
        return j_.begin_object().field("ph", "X").field("pid", pid).field("tid", tid)
            .field("name", name).field("cat", cat).field("ts", ts).field("dur", std::max(0.0, dur));
    }
    void flow(const char* ph, uint64_t id, int pid, int64_t tid, double ts) {
        j_.begin_object().field("ph", ph).field("id", id).field("pid", pid).field("tid", tid)
            .field("name", "lock handover").field("cat", "spinlock").field("ts", ts);
        if (ph[0] == 'f') j_.field("bp", "e");
        j_.end_object();
    }
    JsonWriter& json() { return j_; }
    std::string finish() {
        j_.end_array().field("displayTimeUnit", "ns").key("otherData").begin_object()
            .field("source", "spinlab-collect trace export")
            .field("session_id", t_.header.session.session_id)
            .field("tsc_hz", t_.header.tsc_hz)
            .field("axis_tsc_hz", axis_hz_)
            .field("time_axis", clock_ ? "host TSC / axis_tsc_hz (guest TSC mapped through clock.json)"
                                       : "guest TSC / axis_tsc_hz")
            .end_object().end_object();
        return j_.take();
    }

private:
    double axis_us(uint64_t tsc) const { return double(tsc) * 1e6 / double(axis_hz_); }

    const LoadedTrace& t_;
    const ClockFit* clock_;
    uint64_t axis_hz_;
    JsonWriter j_;
};

std::string text(const char* s, size_t n) { return std::string(s, strnlen(s, n)); }

// Every event, per CPU in order; the thread names from thread start/rundown events.
struct GuestEvents {
    explicit GuestEvents(const LoadedTrace& t) : cpus(t.header.cpu_count) {
        for (uint32_t cpu = 0; cpu < t.header.cpu_count; cpu++)
            for (const TraceBuffer& b : t.cpus[cpu]) {
                locktrace::BufferView v;
                locktrace::parse_buffer(b.bytes.data(), b.bytes.size(), &v);
                locktrace::for_each_event(v, [&](const TraceEventHeader& h, const uint8_t* ev) {
                    cpus[cpu].push_back({h, ev});
                    if (h.type == uint16_t(TraceEventType::kThreadStart) ||
                        h.type == uint16_t(TraceEventType::kThreadRundown)) {
                        const auto e = load<TraceThreadEvent>(ev);
                        names[e.thread_id] = text(e.name, sizeof e.name);
                    }
                });
            }
    }
    std::string thread_name(uint32_t tid) const {
        auto it = names.find(tid);
        return it != names.end() && !it->second.empty() ? it->second + " (" + std::to_string(tid) + ")"
                                                        : "thread " + std::to_string(tid);
    }

    std::vector<std::vector<Event>> cpus;
    std::map<uint32_t, std::string> names;
};

// The guest's tracks: on each CPU the threads that ran there, from one context switch to the
// next; on each thread its contended spinlock waits, each with a flow to its holder's CPU.
class GuestTracks {
public:
    GuestTracks(Emitter& out, const LoadedTrace& t, const GuestEvents& events)
        : out_(out), t_(t), events_(events) {}

    void write_cpu(uint32_t cpu) {
        const auto& evs = events_.cpus[cpu];
        if (evs.empty()) return;
        first_us = std::min(first_us, out_.guest_us(evs.front().h.tsc));
        last_us = std::max(last_us, out_.guest_us(evs.back().h.tsc));
        bool known = false;
        uint32_t cur = 0, cur_pid = 0;
        uint64_t since = evs.front().h.tsc;
        auto close = [&](uint64_t until) {
            if (known && cur != 0)
                out_.complete(kPidCpus, cpu, events_.thread_name(cur), "thread", out_.guest_us(since),
                              out_.guest_us(until) - out_.guest_us(since))
                    .key("args").begin_object().field("thread_id", cur).field("process_id", cur_pid)
                    .end_object().end_object();
        };
        for (const Event& e : evs) {
            if (e.h.type == uint16_t(TraceEventType::kContextSwitch)) {
                const auto c = load<TraceContextSwitchEvent>(e.bytes);
                if (!known) cur = c.old_thread_id, cur_pid = c.old_process_id, known = true;
                close(e.h.tsc);
                cur = c.new_thread_id, cur_pid = c.new_process_id, since = e.h.tsc;
            } else if (e.h.type == uint16_t(TraceEventType::kSpinlock)) {
                write_wait(e);
            }
        }
        close(evs.back().h.tsc);
    }

    // The name of every track that has waits.
    void name_waiters() {
        for (const auto& [track, _] : waiters_)
            out_.meta(kPidThreads, track, "thread_name",
                      track >= kNoThreadTrack ? "CPU " + std::to_string(track - kNoThreadTrack) + ", no thread"
                                              : events_.thread_name(uint32_t(track)));
    }

    // class -> bin -> contended waits
    const std::map<uint32_t, std::map<int64_t, uint64_t>>& contended() const { return contended_; }

    double first_us = INFINITY, last_us = -INFINITY;  // the span of the guest's events

private:
    void write_wait(const Event& e) {
        const auto s = load<TraceSpinlockEvent>(e.bytes);
        if (!(s.flags & kTraceSpinContended) || s.wait_cycles == 0 || s.wait_cycles > s.acquire_tsc) return;
        const uint64_t begin = s.acquire_tsc - s.wait_cycles;
        const double b = out_.guest_us(begin), en = out_.guest_us(s.acquire_tsc);
        contended_[s.class_id][int64_t(std::floor(b / kPerfettoCounterBinUs))]++;
        const int64_t track = e.h.thread_id ? int64_t(e.h.thread_id) : kNoThreadTrack + e.h.cpu;
        waiters_[track] = true;
        char lock[24];
        snprintf(lock, sizeof lock, "0x%llx", static_cast<unsigned long long>(s.lock_address));
        out_.complete(kPidThreads, track, "spinlock wait, class " + std::to_string(s.class_id), "spinlock", b,
                      en - b)
            .key("args").begin_object().field("lock", lock).field("class_id", s.class_id)
            .field("cpu", uint32_t(e.h.cpu)).field("wait_cycles", s.wait_cycles)
            .field("spin_count", s.spin_count)
            .field("holder_cpu_start", int64_t(s.holder_cpu_start == kNoCpu ? -1 : s.holder_cpu_start))
            .field("holder_cpu_end", int64_t(s.holder_cpu_end == kNoCpu ? -1 : s.holder_cpu_end))
            .field("lhp_class", lhp_class_name(static_cast<LhpClass>(s.lhp_class)))
            .end_object().end_object();
        const uint32_t holder = s.holder_cpu_end != kNoCpu ? s.holder_cpu_end : s.holder_cpu_start;
        if (holder != kNoCpu && holder < t_.header.cpu_count) {
            ++flow_id_;
            out_.flow("s", flow_id_, kPidThreads, track, b);
            out_.flow("f", flow_id_, kPidCpus, holder, en);
        }
    }

    Emitter& out_;
    const LoadedTrace& t_;
    const GuestEvents& events_;
    uint64_t flow_id_ = 0;
    std::map<int64_t, bool> waiters_;
    std::map<uint32_t, std::map<int64_t, uint64_t>> contended_;
};

// Counters: every class in every bin from the first to the last, so a rate falls back to 0.
void write_contended_rates(Emitter& out, const std::map<uint32_t, std::map<int64_t, uint64_t>>& contended) {
    if (contended.empty()) return;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (const auto& [_, bins] : contended)
        lo = std::min(lo, bins.begin()->first), hi = std::max(hi, bins.rbegin()->first);
    for (int64_t bin = lo; bin <= hi + 1; bin++) {
        JsonWriter& j = out.json();
        j.begin_object().field("ph", "C").field("pid", kPidCpus).field("tid", int64_t(0))
            .field("name", "contended waits/s").field("ts", double(bin) * kPerfettoCounterBinUs)
            .key("args").begin_object();
        for (const auto& [cls, bins] : contended) {
            auto it = bins.find(bin);
            const double n = it == bins.end() ? 0.0 : double(it->second);
            j.field("class " + std::to_string(cls), n * 1e6 / kPerfettoCounterBinUs);
        }
        j.end_object().end_object();
    }
}

// Host vCPU intervals within the trace's span [first_us, last_us].
void write_host_vcpus(Emitter& out, const std::vector<TimelineRow>& timeline, double first_us, double last_us) {
    out.meta(kPidHost, 0, "process_name", "host vCPUs");
    out.sort_index(kPidHost, 3);
    std::map<uint32_t, uint64_t> vcpus;
    for (const TimelineRow& r : timeline) {
        const double b = out.host_us(r.start_host_tsc), e = out.host_us(r.end_host_tsc);
        if (e < first_us || b > last_us) continue;
        vcpus[r.vcpu] = r.tid;
        out.complete(kPidHost, r.vcpu, r.state, "vcpu", b, e - b)
            .key("args").begin_object().field("host_tid", r.tid).field("phase", r.phase)
            .field("rep", r.rep).end_object().end_object();
    }
    for (const auto& [v, tid] : vcpus)
        out.meta(kPidHost, v, "thread_name",
                 "vCPU " + std::to_string(v) + " (host thread " + std::to_string(tid) + ")");
}

}  // namespace

std::string perfetto_json(const LoadedTrace& t, const ClockFit* clock,
                          const std::vector<TimelineRow>* timeline) {
    if (clock != nullptr && clock->host_tsc_hz == 0)
        throw CollectError(kExitUsage, "the clock correlation states no host TSC rate (clock.json "
                                       "host_tsc_hz, or meta.json host.tsc_hz beside it): host time "
                                       "cannot be put on the Perfetto axis");
    Emitter out(t, clock);
    const GuestEvents events(t);
    out.meta(kPidCpus, 0, "process_name", "guest CPUs");
    out.sort_index(kPidCpus, 1);
    out.meta(kPidThreads, 0, "process_name", "guest threads (spinlock waits)");
    out.sort_index(kPidThreads, 2);
    for (uint32_t cpu = 0; cpu < t.header.cpu_count; cpu++)
        out.meta(kPidCpus, cpu, "thread_name", "CPU " + std::to_string(cpu));

    GuestTracks guest(out, t, events);
    for (uint32_t cpu = 0; cpu < t.header.cpu_count; cpu++) guest.write_cpu(cpu);
    guest.name_waiters();
    write_contended_rates(out, guest.contended());
    if (timeline != nullptr && clock != nullptr) write_host_vcpus(out, *timeline, guest.first_us, guest.last_us);
    return out.finish();
}

}  // namespace spinlab::collect
