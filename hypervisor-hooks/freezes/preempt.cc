#include "preempt.h"

#include <sched.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>

#include "freeze_latency.h"
#include "freeze_record.h"
#include "freezer.h"
#include "hypervisor-hooks/common/fs_util.h"
#include "hypervisor-hooks/common/host_clock.h"
#include "hypervisor-hooks/timeline/sched_switch_parse.h"
#include "hypervisor-hooks/timeline/switch_records.h"
#include "hypervisor-hooks/timeline/tracefs.h"
#include "hypervisor-hooks/vcpu_state/vcpu_state_publisher.h"
#include "record_writer.h"
#include "thaw_plan.h"

namespace spinlab::load {

namespace {
// Thawed windows wait this long at most for their switch-in before the trace is read again.
constexpr uint64_t kDrainPeriodNs = 100'000'000;
// At the end: how long thawed threads get to run again before the record says not-resumed
// (the wait ends as soon as all have; a thawed thread waited 190 ms for a CPU under load).
constexpr uint64_t kFinalResumeWaitNs = 2'000'000'000;

struct Victim {
    Victim(ThreadTarget t, std::unique_ptr<CgroupFreezer> f, FreezeSchedule s, uint64_t origin)
        : target(t), freezer(std::move(f)), schedule(std::move(s)), origin_ns(origin), switches(t.tid) {}
    ThreadTarget target;
    std::unique_ptr<CgroupFreezer> freezer;
    FreezeSchedule schedule;
    uint64_t origin_ns;
    ThreadSwitches switches;
    FreezeWindow window{};
    bool frozen = false;
    uint64_t thaw_at_ns = 0;
    FreezeRecord open;  // the window in progress
    uint64_t planned_begin_ns = 0, planned_end_ns = 0;
    uint64_t next_event_ns() const { return frozen ? thaw_at_ns : origin_ns + window.start_ns; }
};

// A thawed window waiting for the thread's switch-in, and the planned times to convert.
struct Unfinished {
    Victim* victim;
    FreezeRecord record;
    uint64_t planned_begin_ns, planned_end_ns;
};

FILE* open_output(const std::string& path) {
    if (path.empty() || path == "-") return stdout;
    FILE* f = std::fopen(path.c_str(), "we");
    if (!f) throw LoadError("--out " + path + ": " + std::strerror(errno));
    return f;
}

// Makes the injector SCHED_FIFO at `priority` (0: leaves it alone). Where that is not permitted
// (EPERM: no CAP_SYS_NICE and RLIMIT_RTPRIO below it, as in an unprivileged container) it stays
// at normal priority: the freezes still work, they may only start later under load. Returns
// why it fell back, empty when it did not; other errors throw.
std::string set_rt_priority(int priority) {
    if (priority <= 0) return "";
    sched_param sp{};
    sp.sched_priority = priority;
    if (::sched_setscheduler(0, SCHED_FIFO, &sp) == 0) return "";
    if (errno != EPERM) throw LoadError("--rt-priority " + std::to_string(priority) + ": " + std::strerror(errno));
    return std::string("sched_setscheduler(SCHED_FIFO, ") + std::to_string(priority) + "): " + std::strerror(errno);
}

// The victims' perf switch records (effective_window.h), or none with one warning.
std::unique_ptr<SwitchRecorder> open_switch_records(const std::vector<int>& tids) {
    try {
        return std::make_unique<SwitchRecorder>(tids);
    } catch (const LoadError& e) {
        std::fprintf(stderr, "preempt: WARNING no perf switch records (%s): a switch-in the kernel leaves out of "
                     "the trace ends its window at the thaw request\n", e.what());
        return nullptr;
    }
}

// The one warning of a fallback, and the facts the ready file states (command_session.h).
std::vector<std::pair<std::string, std::string>> priority_facts(int asked, const std::string& fallback) {
    if (asked <= 0) return {};
    if (!fallback.empty()) {
        std::fprintf(stderr, "preempt: WARNING --rt-priority %d refused (%s; needs CAP_SYS_NICE or "
                     "RLIMIT_RTPRIO >= %d): the injector runs at normal priority, so under load freezes "
                     "can start late (the record's begin - planned_begin says by how much)\n",
                     asked, fallback.c_str(), asked);
    }
    return {{"rt_priority_asked", std::to_string(asked)},
            {"rt_priority", fallback.empty() ? std::to_string(asked) : "0"},
            {"rt_priority_fallback", fallback}};
}

// What the ready file states of the freezer (the runner copies it into meta.json).
std::vector<std::pair<std::string, std::string>> freezer_facts(const CgroupChoice& choice, bool key_held,
                                                               const FreezerWrites& w) {
    auto ms = [](uint64_t ns) {
        char text[32];
        std::snprintf(text, sizeof text, "%.4f", static_cast<double>(ns) / 1e6);
        return std::string(text);
    };
    return {{"freezer_cgroup", choice.version == CgroupVersion::kV1 ? "v1" : "v2"},
            {"freezer_key_held", key_held ? "1" : "0"},
            {"freezer_freeze_write_ms", ms(w.freeze_ns)},
            {"freezer_thaw_write_ms", ms(w.thaw_ns)}};
}
}  // namespace

void validate_preempt(const PreemptConfig& c) {
    validate_target_spec(c.targets);
    validate_schedule(c.schedule);
    if (c.duration_s < 0) throw LoadError("--duration must not be negative");
    if (c.start_delay_s < 0) throw LoadError("--start-delay must not be negative");
    if (c.rt_priority < 0 || c.rt_priority > 99) throw LoadError("--rt-priority must be 0..99");
    if (!c.vcpu_state_latency_json.empty() && c.vcpu_state.empty())
        throw LoadError("--vcpu-state-latency-json needs --vcpu-state");
}

int run_preempt(Session& session, const PreemptConfig& c) {
    validate_preempt(c);
    std::vector<ThreadTarget> targets = resolve_targets(c.targets);
    CgroupChoice choice = choose_hierarchy_on_host("freezer", c.method);
    ThreadCgroups cgroups(session.ledger(), session.owner(), "freeze", choice, "freezer");
    // v1: the kernel's freezer static key stays on from here (freezer.h); then the writes'
    // latency as the victims will see it, and each thaw asked for that much earlier (thaw_plan.h).
    // Declared before the victims: their freezers thaw first on the way out.
    std::optional<FreezerKeyHolder> key;
    if (choice.version == CgroupVersion::kV1) key.emplace(session.ledger(), session.owner(), choice.mount);
    const FreezerWrites calibrated = calibrate_freezer(session.ledger(), session.owner(), choice, 5);
    WriteEstimate thaw_writes;
    thaw_writes.add(calibrated.thaw_ns);
    std::vector<int> tids;
    for (const ThreadTarget& t : targets) tids.push_back(t.tid);
    // The effective windows come from the threads' own sched_switch events, in TSC.
    TraceInstance trace(session.ledger(), session.owner(), "effective", "x86-tsc", tids, 512);
    std::unique_ptr<SwitchRecorder> records = open_switch_records(tids);
    SchedSwitchParser parser;
    // Timers fire late by the timer slack (50 us by default); windows should be exact.
    ::prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);
    FILE* out = open_output(c.out_csv);
    std::unique_ptr<FILE, int (*)(FILE*)> closer(out == stdout ? nullptr : out, &std::fclose);
    std::fputs(freeze_record_header().c_str(), out);
    std::fflush(out);
    auto writer = std::make_unique<RecordWriter>(out);  // before the priority: it stays SCHED_OTHER
    // The guest's vCPU state words: kVcpuOffFrozen from each freeze's mark to its thaw.
    std::unique_ptr<VcpuStateWriter> words;
    if (!c.vcpu_state.empty())
        words = std::make_unique<VcpuStateWriter>(c.vcpu_state, kVcpuStatePublisherFreezes, kVcpuOffFrozen,
                                                  vcpu_indexes(targets));
    PublishStats word_stats;
    word_stats.source = "freezes";
    std::vector<std::pair<uint64_t, uint64_t>> word_latency_tsc;  // (request, store)
    auto publish_frozen = [&](const Victim& v, bool frozen, uint64_t request_tsc) {
        if (!words) return;
        ++word_stats.events;
        const VcpuStateWriter::State before = words->state();
        if (words->refresh() != before)
            std::fprintf(stderr, "preempt: vcpu-state: %s %s%s%s\n", words->path().c_str(),
                         vcpu_state_name(words->state()), words->why().empty() ? "" : ": ", words->why().c_str());
        if (words->set(static_cast<uint32_t>(v.target.vcpu), frozen ? kVcpuOffFrozen : 0)) {
            word_latency_tsc.emplace_back(request_tsc, read_tsc());
            ++word_stats.published;
        } else {
            ++word_stats.not_attached;
        }
    };
    auto facts = priority_facts(c.rt_priority, set_rt_priority(c.rt_priority));
    for (auto& fact : freezer_facts(choice, key.has_value(), calibrated)) facts.push_back(std::move(fact));

    std::deque<Victim> victims;
    for (size_t i = 0; i < targets.size(); ++i) {
        std::string dir = cgroups.add(targets[i]);
        Victim& v = victims.emplace_back(targets[i], std::make_unique<CgroupFreezer>(dir, choice.version),
                                         FreezeSchedule(c.schedule, i), 0);
        v.window = v.schedule.next();
    }
    if (records) records->enable();
    const ClockPair first_pair = sample_clock_pair();
    const ClockPair raw_first = sample_clock_pair(CLOCK_MONOTONIC_RAW);
    trace.start();
    // The schedule starts once everything is set up (moving threads between cgroups can take
    // tens of ms under load, which made first windows late).
    const uint64_t origin = monotonic_ns() + static_cast<uint64_t>(c.start_delay_s * 1e9) + 20'000'000;
    for (size_t i = 0; i < victims.size(); ++i) {
        victims[i].origin_ns = origin + (c.stagger ? c.schedule.period_ns * i / victims.size() : 0);
    }
    std::fprintf(stderr, "preempt: %zu thread(s) via cgroup %s at %s%s; freezer writes (empty cgroup, median of %zu): "
                 "freeze %.4f ms, thaw %.4f ms\n", victims.size(),
                 choice.version == CgroupVersion::kV1 ? "v1 freezer" : "v2 cgroup.freeze",
                 choice.mount.c_str(), key ? ", its static key held on" : "", calibrated.cycles,
                 static_cast<double>(calibrated.freeze_ns) / 1e6, static_cast<double>(calibrated.thaw_ns) / 1e6);
    if (words && words->refresh() != VcpuStateWriter::State::kAttached)  // publishes itself if laid out
        std::fprintf(stderr, "preempt: vcpu-state: %s %s: %s\n", words->path().c_str(),
                     vcpu_state_name(words->state()), words->why().c_str());
    session.mark_ready(facts);

    const uint64_t end = c.duration_s > 0 ? origin + static_cast<uint64_t>(c.duration_s * 1e9) : 0;
    uint64_t seq = 0;
    std::deque<Unfinished> unfinished;
    std::vector<FreezeRecord> written;
    uint64_t next_drain_ns = 0;
    // Reads the trace and writes every record whose thread has run again (all of them when
    // `final`), in the order the windows ended.
    auto drain = [&](bool final) {
        if (records) records->drain();  // before the trace (effective_window.h)
        parser.feed(trace.read_available());
        if (final) parser.finish();
        std::vector<SchedSwitch> events = parser.take_events();
        for (Victim& v : victims) v.switches.add(events);
        if (records) {
            // CLOCK_MONOTONIC_RAW -> TSC between the first pair and now: every record is inside.
            TscMap raw_map(raw_first, sample_clock_pair(CLOCK_MONOTONIC_RAW));
            std::map<int, std::vector<uint64_t>> ins;
            for (const SwitchRecord& r : records->take_records())
                if (r.in) ins[r.tid].push_back(raw_map.to_tsc(r.ts));
            for (Victim& v : victims) v.switches.add_recorded_ins(ins[v.target.tid]);
        }
        if (unfinished.empty()) return;
        TscMap map(first_pair, sample_clock_pair());
        auto to_ns = [&](uint64_t tsc) { return map.to_ns(tsc); };
        while (!unfinished.empty()) {
            Unfinished& u = unfinished.front();
            ThreadSwitches& sw = u.victim->switches;
            if (!final && !sw.resumed_after(u.record.end_tsc)) break;
            u.record.effective = sw.window(u.record.begin_tsc, u.record.marked_tsc, u.record.end_tsc,
                                           u.record.frozen_tsc);
            u.record.planned_begin_tsc = map.to_tsc(u.planned_begin_ns);
            u.record.planned_end_tsc = map.to_tsc(u.planned_end_ns);
            written.push_back(u.record);
            writer->write(format_freeze_record(u.record, to_ns));
            sw.drop_before(u.record.end_tsc);
            unfinished.pop_front();
        }
    };
    auto thaw = [&](Victim& v) {
        v.open.end_tsc = read_tsc();
        const uint64_t asked_ns = monotonic_ns();
        v.freezer->thaw();
        v.open.thawed_tsc = read_tsc();
        thaw_writes.add(monotonic_ns() - asked_ns);
        publish_frozen(v, false, v.open.end_tsc);  // after the thaw: the word never leads it
        v.frozen = false;
        unfinished.push_back({&v, v.open, v.planned_begin_ns, v.planned_end_ns});
        if (!next_drain_ns) next_drain_ns = monotonic_ns() + kDrainPeriodNs;
    };
    for (;;) {
        auto next = std::min_element(victims.begin(), victims.end(), [](const Victim& a, const Victim& b) {
            return a.next_event_ns() < b.next_event_ns();
        });
        uint64_t when = next->next_event_ns();
        // A window that has not begun by the end is not started; one in progress ends early.
        if (end && !next->frozen && when + next->window.length_ns > end) when = end;
        if (end && when > end) when = end;
        if (next_drain_ns && next_drain_ns < when) {
            if (session.wait_until(next_drain_ns) == Wake::kStop) break;
            drain(false);
            next_drain_ns = unfinished.empty() ? 0 : monotonic_ns() + kDrainPeriodNs;
            continue;
        }
        if (session.wait_until(when) == Wake::kStop) break;
        if (end && monotonic_ns() >= end && !next->frozen) break;
        Victim& v = *next;
        if (v.frozen) {
            thaw(v);
            v.window = v.schedule.next();
            continue;
        }
        v.open = FreezeRecord{};
        v.open.seq = seq++;
        v.open.tid = v.target.tid;
        v.open.vcpu = v.target.vcpu;
        v.open.begin_tsc = read_tsc();
        v.freezer->freeze();
        v.open.marked_tsc = read_tsc();
        const uint64_t marked_ns = monotonic_ns();
        publish_frozen(v, true, v.open.begin_tsc);  // after the mark: the word never leads it
        v.frozen = true;
        // Every freeze lasts its length from the moment its mark has surely landed (the write
        // returned) to the moment the thaw write returns: a late request or a slow freeze write
        // moves the thaw, and the thaw is asked for the estimated thaw write earlier.
        v.planned_begin_ns = v.origin_ns + v.window.start_ns;
        v.planned_end_ns = v.planned_begin_ns + v.window.length_ns;
        v.thaw_at_ns = marked_ns + v.window.length_ns - thaw_lead_ns(thaw_writes, v.window.length_ns);
        if (end) v.thaw_at_ns = std::min(v.thaw_at_ns, end);
        if (v.freezer->wait_frozen(v.thaw_at_ns, session.signal_fd())) v.open.frozen_tsc = read_tsc();
        // The thread is stopped now (or we gave up): reading the trace cannot disturb it.
        drain(false);
    }
    // Thaw anything still frozen, give the threads a moment to run, then finish every record.
    for (Victim& v : victims) {
        if (v.frozen) thaw(v);
    }
    for (uint64_t until = monotonic_ns() + kFinalResumeWaitNs; !unfinished.empty() && monotonic_ns() < until;) {
        ::usleep(5'000);
        drain(false);
    }
    trace.stop();
    if (records) records->disable();
    drain(true);
    writer.reset();  // every row written before the summary
    std::vector<size_t> status_counts(4, 0);
    FreezeLatency latency(TscMap(first_pair, sample_clock_pair()).ticks_per_ns() * 1e6);
    for (const FreezeRecord& r : written) {
        ++status_counts[static_cast<size_t>(r.effective.status)];
        latency.add(r);
    }
    std::fprintf(stderr, "preempt: %llu freeze(s); effective windows: %zu ok, %zu never-stopped, "
                 "%zu not-resumed, %zu no-events; %s%s%s\n",
                 static_cast<unsigned long long>(seq), status_counts[0], status_counts[1],
                 status_counts[2], status_counts[3], latency.summary().c_str(),
                 session.stopped() ? "; stopped by " : "", session.stop_reason().c_str());
    if (words) {
        words->detach();
        const double ticks_per_us = TscMap(first_pair, sample_clock_pair()).ticks_per_ns() * 1e3;
        for (const auto& [request, store] : word_latency_tsc)
            word_stats.latency_us.push_back((double(store) - double(request)) / ticks_per_us);
        std::fprintf(stderr, "preempt: vcpu-state: %s\n", word_stats.summary().c_str());
        if (!c.vcpu_state_latency_json.empty()) {
            FILE* j = std::fopen(c.vcpu_state_latency_json.c_str(), "we");
            if (!j || std::fprintf(j, "%s\n", word_stats.json(c.vcpu_state).c_str()) < 0 || std::fclose(j) != 0)
                throw LoadError("--vcpu-state-latency-json " + c.vcpu_state_latency_json + ": " + std::strerror(errno));
        }
    }
    if (!c.latency_json.empty()) {
        FILE* j = std::fopen(c.latency_json.c_str(), "we");
        if (!j || std::fprintf(j, "%s\n", latency.json().c_str()) < 0 || std::fclose(j) != 0) {
            throw LoadError("--latency-json " + c.latency_json + ": " + std::strerror(errno));
        }
    }
    if (records && records->lost()) {
        std::fprintf(stderr, "preempt: WARNING the kernel lost %llu perf switch records; a window whose switch-in "
                     "the trace also lacks ends at its thaw request\n",
                     static_cast<unsigned long long>(records->lost()));
    }
    if (parser.lost_events()) {
        std::fprintf(stderr, "preempt: WARNING the kernel lost %llu sched_switch events; effective "
                     "windows around the loss may be wrong\n",
                     static_cast<unsigned long long>(parser.lost_events()));
        return 2;
    }
    return 0;
}

}  // namespace spinlab::load
