#include "timeline.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include "hypervisor-hooks/common/fs_util.h"
#include "hypervisor-hooks/common/host_clock.h"
#include "hypervisor-hooks/vcpu_state/vcpu_state_publisher.h"
#include "run_intervals.h"
#include "sched_switch_parse.h"
#include "switch_records.h"
#include "tracefs.h"
#include "untraced_switches.h"

namespace spinlab::load {

namespace {
constexpr uint64_t kDrainPeriodNs = 250'000'000;

void write_text(const std::string& path, const std::string& text) {
    if (path.empty() || path == "-") {
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
        return;
    }
    FILE* f = std::fopen(path.c_str(), "we");
    if (!f) throw LoadError("cannot write " + path + ": " + std::strerror(errno));
    bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    ok = (std::fclose(f) == 0) && ok;
    if (!ok) throw LoadError("cannot write " + path + ": " + std::strerror(errno));
}

std::optional<bool> running_now(const ThreadTarget& t) {
    try {
        std::string stat = read_file("/proc/" + std::to_string(t.pid) + "/task/" + std::to_string(t.tid) + "/stat");
        size_t close = stat.rfind(')');
        if (close != std::string::npos && close + 2 < stat.size()) return stat[close + 2] == 'R';
    } catch (const LoadError&) {
    }
    return std::nullopt;
}

// The threads' perf switch records, or none (with one warning) where perf is refused.
std::unique_ptr<SwitchRecorder> open_switch_records(const TimelineConfig& c, const std::vector<int>& tids) {
    if (!c.switch_records) return nullptr;
    try {
        return std::make_unique<SwitchRecorder>(tids);
    } catch (const LoadError& e) {
        std::fprintf(stderr, "timeline: WARNING no perf switch records (%s): switches the kernel leaves out "
                     "of the trace stay unknown\n", e.what());
        return nullptr;
    }
}

// Each unknown interval left (the first kMaxDescribed), with the thread's perf switch records
// nearest to it on either side: what a reader needs to tell a switch neither source recorded
// from records that lie just outside the hole. to_trace: an interval's TSC -> the trace clock;
// us(a, b): b - a in us.
void describe_unknown(const std::vector<RunInterval>& intervals, const std::vector<SwitchRecord>& records,
                      const std::function<uint64_t(uint64_t)>& to_trace,
                      const std::function<double(uint64_t, uint64_t)>& us) {
    constexpr size_t kMaxDescribed = 5;
    size_t shown = 0;
    for (const RunInterval& r : intervals) {
        if (r.state != RunState::kUnknown || shown++ == kMaxDescribed) continue;
        const uint64_t a = to_trace(r.start), b = to_trace(r.end);
        const SwitchRecord *before = nullptr, *after = nullptr;
        for (const SwitchRecord& x : records) {
            if (x.tid != r.tid) continue;
            if (x.ts <= a && (!before || x.ts > before->ts)) before = &x;
            if (x.ts >= b && (!after || x.ts < after->ts)) after = &x;
        }
        size_t inside = 0;
        for (const SwitchRecord& x : records) inside += x.tid == r.tid && x.ts > a && x.ts < b;
        auto side = [](const SwitchRecord* x) { return !x ? "none" : x->in ? "switch-in" : "switch-out"; };
        std::fprintf(stderr, "timeline: tid %d unknown for %.1f us (%s); perf records of the thread: %zu inside, "
                     "nearest before: %s %.1f us earlier, nearest after: %s %.1f us later\n",
                     r.tid, us(a, b), r.reason.c_str(), inside, side(before), before ? us(before->ts, a) : 0.0,
                     side(after), after ? us(b, after->ts) : 0.0);
    }
}

// The records' CLOCK_MONOTONIC_RAW ns on the trace clock, through (raw, TSC) pairs taken at the
// window's edges (then TSC -> CLOCK_MONOTONIC for the mono trace clock).
std::vector<SwitchRecord> on_trace_clock(std::vector<SwitchRecord> records, ClockPair raw_first, ClockPair raw_last,
                                         const TscMap& mono_map, bool tsc_clock) {
    TscMap raw_map(raw_first, raw_last);
    for (SwitchRecord& r : records) {
        const uint64_t tsc = raw_map.to_tsc(r.ts);
        r.ts = tsc_clock ? tsc : mono_map.to_ns(tsc);
    }
    return records;
}

// Adds the processes of the spinlab-load ledgers in `state_dir` (none without one) to the hogs.
void add_ledger_hogs(const std::string& state_dir, PreemptorContext& preemptors) {
    if (state_dir.empty()) return;
    std::set<int> now = ledger_processes(state_dir);
    preemptors.hogs.insert(now.begin(), now.end());
}

// The keeper of the guest's vCPU state words (--vcpu-state), or none.
std::unique_ptr<SwitchPublisher> open_publisher(const TimelineConfig& c, const std::vector<ThreadTarget>& targets) {
    if (c.vcpu_state.empty()) return nullptr;
    try {
        return std::make_unique<SwitchPublisher>(c.vcpu_state, targets, c.vcpu_state_period_us);
    } catch (const LoadError& e) {  // perf refused names no option: say which needs it
        const std::string what = e.what();
        throw LoadError(what.rfind("--vcpu-state", 0) == 0 ? what : "--vcpu-state: " + what);
    }
}

// Stops the publisher and says how its words went; 2 when it stopped early, else 0.
int stop_publisher(SwitchPublisher& publisher, const TimelineConfig& c) {
    int code = 0;
    publisher.stop();  // the words are cleared: nobody keeps them any more
    std::fprintf(stderr, "timeline: vcpu-state: %s\n", publisher.stats().summary().c_str());
    if (!publisher.error().empty()) {
        std::fprintf(stderr, "timeline: WARNING the vCPU state publisher stopped early: %s\n",
                     publisher.error().c_str());
        code = 2;
    }
    if (!c.vcpu_state_latency_json.empty())
        write_text(c.vcpu_state_latency_json, publisher.stats().json(c.vcpu_state) + "\n");
    return code;
}

// Marks the time inside the freezes of the freeze record `path` frozen; false (with a warning)
// when the record cannot be read.
bool mark_frozen_time(std::vector<RunInterval>& intervals, const std::string& path) {
    try {
        intervals = mark_frozen(intervals, read_frozen_spans(read_file(path)));
        return true;
    } catch (const LoadError& e) {
        std::fprintf(stderr, "timeline: WARNING frozen time is not marked: %s\n", e.what());
        return false;
    }
}

// Each thread's on, off and unknown time, one stderr line per thread.
void say_totals(const std::vector<RunInterval>& intervals, const TscMap& map, bool perf_records) {
    struct Totals {
        uint64_t on = 0, off = 0, unknown = 0;
    };
    std::map<int, Totals> totals;
    for (const RunInterval& r : intervals) {
        Totals& t = totals[r.tid];
        (r.state == RunState::kOn ? t.on : r.state == RunState::kUnknown ? t.unknown : t.off) += r.end - r.start;
    }
    auto ms = [&](uint64_t cycles) { return cycles / map.ticks_per_ns() / 1e6; };
    for (const auto& [tid, t] : totals) {
        std::fprintf(stderr, "timeline: tid %d on %.1f ms, off %.1f ms, unknown %.1f ms%s\n", tid, ms(t.on),
                     ms(t.off), ms(t.unknown),
                     !t.unknown    ? ""
                     : perf_records ? " (switches neither the trace nor perf recorded; see README 'unknown')"
                                    : " (switches the kernel did not trace; see README 'unknown')");
    }
}

// Where the timeline's switches come from: sched:sched_switch in a tracefs instance (root, or
// tracefs readable and writable), completed by perf's switch records; where tracefs is refused
// (an ordinary user), the threads' own perf switch records alone (timeline_source()). Perf
// records run from before the trace starts to after it stops: the window is inside both.
class SwitchSources {
public:
    // Throws LoadError when there is neither.
    SwitchSources(Session& session, const TimelineConfig& c, const std::vector<int>& tids)
        : c_(c), tids_(tids), tsc_clock_(c.clock == "x86-tsc") {
        std::string trace_refused;
        try {
            trace_ = std::make_unique<TraceInstance>(session.ledger(), session.owner(), "timeline", c.clock, tids,
                                                     c.buffer_kb, /*running_stamps=*/true);
        } catch (const LoadError& e) {
            trace_refused = e.what();
        }
        records_ = open_switch_records(c, tids);
        if (!trace_ && !records_)
            throw LoadError("no source for the timeline: tracefs refused (" + trace_refused +
                            ") and perf switch records " +
                            (c.switch_records ? "too (see the warning above)" : "are off (--no-switch-records)"));
        if (!trace_)
            std::fprintf(stderr, "timeline: no tracefs (%s): the timeline comes from the threads' perf switch "
                         "records alone (a switch-out says preempted or blocked, not sleeping or frozen; lost "
                         "records are unknown time)\n", trace_refused.c_str());
    }

    const char* name() const { return timeline_source(trace_ != nullptr, records_ != nullptr); }
    bool perf_records() const { return records_ != nullptr; }

    void start() {
        if (records_) records_->enable();
        first_ = sample_clock_pair();
        raw_first_ = sample_clock_pair(CLOCK_MONOTONIC_RAW);
        if (trace_) trace_->start();
    }

    void say_started() const {
        std::fprintf(stderr, "timeline: source %s: %zu thread(s)%s%s (clock %s; running stamps %s; perf switch "
                     "records %s)\n",
                     name(), tids_.size(), trace_ ? " in " : "", trace_ ? trace_->dir().c_str() : "",
                     c_.clock.c_str(),
                     !trace_                   ? "unavailable: no tracefs"
                     : trace_->running_stamps() ? "from local_timer_entry"
                                                : "unavailable: irq_vectors:local_timer_entry missing",
                     records_ ? "on" : "off");
    }

    void drain() {
        if (trace_) {
            std::string chunk = trace_->read_available();
            if (!c_.raw_out.empty()) raw_ += chunk;
            parser_.feed(chunk);
        }
        if (records_) records_->drain();
    }

    void stop() {
        raw_last_ = sample_clock_pair(CLOCK_MONOTONIC_RAW);
        last_ = sample_clock_pair();
        if (trace_) trace_->stop();
        if (records_) records_->disable();
        drain();
        parser_.finish();
    }

    // TSC <-> CLOCK_MONOTONIC over the window (after stop()).
    TscMap map() const { return TscMap(first_, last_); }
    const std::string& raw() const { return raw_; }

    // The threads' run intervals over the window, in TSC (after stop()): the trace's switches
    // and those only perf recorded.
    std::vector<RunInterval> run_intervals(const std::vector<TimelineThread>& threads) {
        const TscMap map = this->map();
        const uint64_t window_start = tsc_clock_ ? first_.tsc : first_.mono_ns;
        const uint64_t window_end = tsc_clock_ ? last_.tsc : last_.mono_ns;
        std::vector<SchedSwitch> events = parser_.events();
        if (records_) {
            mapped_ = on_trace_clock(records_->records(), raw_first_, raw_last_, map, tsc_clock_);
            AddedSwitches added = untraced_switches(events, mapped_, tids_, window_start, window_end);
            events.insert(events.end(), added.events.begin(), added.events.end());
            std::fprintf(stderr, "timeline: %llu switch-in(s) and %llu switch-out(s) %s, taken from "
                         "%zu perf switch records\n",
                         static_cast<unsigned long long>(added.switch_ins),
                         static_cast<unsigned long long>(added.switch_outs), trace_ ? "the trace lacked" : "in all",
                         records_->records().size());
        }
        std::vector<RunInterval> intervals = build_run_intervals(events, threads, window_start, window_end);
        if (!tsc_clock_) {
            // Trace timestamps are ns: keep ns exact, derive the TSC columns.
            for (RunInterval& r : intervals) {
                r.start = map.to_tsc(r.start);
                r.end = map.to_tsc(r.end);
            }
        }
        return intervals;
    }

    // describe_unknown with the perf records, where there are any.
    void describe_unknown_intervals(const std::vector<RunInterval>& intervals) const {
        if (!records_) return;
        const TscMap map = this->map();
        auto us = [&](uint64_t a, uint64_t b) {  // b - a in us on the trace clock
            const double d = static_cast<double>(b) - static_cast<double>(a);
            return tsc_clock_ ? d / map.ticks_per_ns() / 1e3 : d / 1e3;
        };
        // the intervals are in TSC (converted above where the trace clock is mono)
        describe_unknown(intervals, mapped_, [&](uint64_t t) { return tsc_clock_ ? t : map.to_ns(t); }, us);
    }

    size_t traced_events() const { return parser_.events().size(); }

    // Warns of what the kernel lost; true when it lost anything (the timeline is then wrong or
    // unknown around the loss).
    bool warn_of_losses() const {
        if (parser_.lost_events()) {
            std::fprintf(stderr, "timeline: WARNING the kernel lost %llu events (raise --buffer-kb); "
                         "intervals around the loss are wrong\n",
                         static_cast<unsigned long long>(parser_.lost_events()));
            return true;
        }
        if (records_ && records_->lost()) {
            std::fprintf(stderr, "timeline: WARNING the kernel lost %llu perf switch records; switches the trace "
                         "also lacks stay unknown\n",
                         static_cast<unsigned long long>(records_->lost()));
            return true;
        }
        return false;
    }

private:
    const TimelineConfig& c_;
    const std::vector<int>& tids_;
    const bool tsc_clock_;
    std::unique_ptr<TraceInstance> trace_;
    std::unique_ptr<SwitchRecorder> records_;
    SchedSwitchParser parser_;
    std::string raw_;  // the trace as read, for --raw-out
    ClockPair first_{}, raw_first_{}, last_{}, raw_last_{};
    std::vector<SwitchRecord> mapped_;  // the perf records on the trace clock
};
}  // namespace

const char* timeline_source(bool tracefs, bool perf) {
    if (tracefs) return perf ? "sched_switch+perf" : "sched_switch";
    return "perf";
}

void validate_timeline(const TimelineConfig& c) {
    validate_target_spec(c.targets);
    if (c.clock != "x86-tsc" && c.clock != "mono") {
        throw LoadError("--trace-clock '" + c.clock + "' must be x86-tsc or mono");
    }
    if (c.duration_s < 0) throw LoadError("--duration must not be negative");
    if (c.buffer_kb < 64 || c.buffer_kb > 1 << 20) {
        throw LoadError("--buffer-kb " + std::to_string(c.buffer_kb) + " must be in [64, 1048576]");
    }
    if (c.phase.find_first_of(",\n\"") != std::string::npos)
        throw LoadError("--phase '" + c.phase + "' must not contain a comma, quote or newline (a CSV field)");
    if (c.vcpu_state_period_us < 50 || c.vcpu_state_period_us > 1'000'000)
        throw LoadError("--vcpu-state-period-us " + std::to_string(c.vcpu_state_period_us) +
                        " must be in [50, 1000000]");
    if (!c.vcpu_state_latency_json.empty() && c.vcpu_state.empty())
        throw LoadError("--vcpu-state-latency-json needs --vcpu-state");
}

int run_timeline(Session& session, const TimelineConfig& c) {
    validate_timeline(c);
    std::vector<ThreadTarget> targets = resolve_targets(c.targets);
    std::vector<int> tids;
    std::vector<TimelineThread> threads;
    std::map<int, int> own_vcpus;
    for (const ThreadTarget& t : targets) {
        tids.push_back(t.tid);
        threads.push_back({t.tid, t.vcpu, running_now(t)});
        own_vcpus[t.tid] = t.vcpu;
    }
    PreemptorContext preemptors = preemptor_context(own_vcpus, c.neighbours);
    add_ledger_hogs(c.hog_state_dir, preemptors);
    SwitchSources sources(session, c, tids);
    std::unique_ptr<SwitchPublisher> publisher = open_publisher(c, targets);

    sources.start();
    if (publisher) publisher->start();
    session.mark_ready({{"source", sources.name()}});
    sources.say_started();
    const uint64_t end = c.duration_s > 0 ? monotonic_ns() + static_cast<uint64_t>(c.duration_s * 1e9) : 0;
    // Drain on a timer, never on trace_pipe readability: waking up for each event would
    // preempt the traced thread on its CPU, which writes two more events, which wakes us
    // again -- the tracer would become the load it measures.
    for (;;) {
        uint64_t now = monotonic_ns();
        if (end && now >= end) break;
        uint64_t next = now + kDrainPeriodNs;
        if (end && next > end) next = end;
        if (session.wait_until(next) == Wake::kStop) break;
        sources.drain();
        add_ledger_hogs(c.hog_state_dir, preemptors);  // a hog that ends before the timeline is still known
    }
    int code = publisher ? stop_publisher(*publisher, c) : 0;
    sources.stop();
    add_ledger_hogs(c.hog_state_dir, preemptors);

    std::vector<RunInterval> intervals = sources.run_intervals(threads);
    if (!c.freezes.empty() && !mark_frozen_time(intervals, c.freezes)) code = 2;
    classify_preemptors(intervals, preemptors);
    const TscMap map = sources.map();
    const std::string rows =
        format_run_intervals_csv(intervals, {c.phase, c.rep}, [&](uint64_t tsc) { return map.to_ns(tsc); });
    write_text(c.out_csv, run_intervals_csv_header() + rows);
    if (!c.raw_out.empty()) write_text(c.raw_out, sources.raw());
    say_totals(intervals, map, sources.perf_records());
    sources.describe_unknown_intervals(intervals);
    std::fprintf(stderr, "timeline: source %s: %zu traced events (switches and running stamps)%s%s\n",
                 sources.name(), sources.traced_events(), session.stopped() ? ", stopped by " : "",
                 session.stop_reason().c_str());
    return sources.warn_of_losses() ? 2 : code;
}

}  // namespace spinlab::load
