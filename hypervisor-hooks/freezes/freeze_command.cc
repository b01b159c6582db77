#include "freeze_command.h"

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
        std::fprintf(stderr, "freeze: WARNING no perf switch records (%s): a switch-in the kernel leaves out of "
                     "the trace ends its window at the thaw request\n", e.what());
        return nullptr;
    }
}

// The one warning of a fallback, and the facts the ready file states (command_session.h).
std::vector<std::pair<std::string, std::string>> priority_facts(int asked, const std::string& fallback) {
    if (asked <= 0) return {};
    if (!fallback.empty()) {
        std::fprintf(stderr, "freeze: WARNING --rt-priority %d refused (%s; needs CAP_SYS_NICE or "
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

// Writes `json` and a newline to `path`, an --OPTION's file; throws LoadError naming both.
void write_json_file(const char* option, const std::string& path, const std::string& json) {
    FILE* j = std::fopen(path.c_str(), "we");
    if (!j || std::fprintf(j, "%s\n", json.c_str()) < 0 || std::fclose(j) != 0)
        throw LoadError(std::string(option) + " " + path + ": " + std::strerror(errno));
}

// The guest's vCPU state words (--vcpu-state): kVcpuOffFrozen from each freeze's mark to its
// thaw, and how long after its request each store landed.
class FrozenWords {
public:
    FrozenWords(const std::string& region, const std::vector<ThreadTarget>& targets) {
        if (!region.empty())
            words_ = std::make_unique<VcpuStateWriter>(region, kVcpuStatePublisherFreezes, kVcpuOffFrozen,
                                                       vcpu_indexes(targets));
        stats_.source = "freezes";
    }

    // Before the ready file: why the words are not kept, where they are not yet.
    void say_unattached() {
        if (words_ && words_->refresh() != VcpuStateWriter::State::kAttached)  // publishes itself if laid out
            std::fprintf(stderr, "freeze: vcpu-state: %s %s: %s\n", words_->path().c_str(),
                         vcpu_state_name(words_->state()), words_->why().c_str());
    }

    void publish(const ThreadTarget& target, bool frozen, uint64_t request_tsc) {
        if (!words_) return;
        ++stats_.events;
        const VcpuStateWriter::State before = words_->state();
        if (words_->refresh() != before)
            std::fprintf(stderr, "freeze: vcpu-state: %s %s%s%s\n", words_->path().c_str(),
                         vcpu_state_name(words_->state()), words_->why().empty() ? "" : ": ",
                         words_->why().c_str());
        if (words_->set(static_cast<uint32_t>(target.vcpu), frozen ? kVcpuOffFrozen : 0)) {
            latency_tsc_.emplace_back(request_tsc, read_tsc());
            ++stats_.published;
        } else {
            ++stats_.not_attached;
        }
    }

    // Detaches, then says how the stores went (and writes it to --vcpu-state-latency-json).
    void finish(const FreezeConfig& c, const ClockPair& first_pair) {
        if (!words_) return;
        words_->detach();
        const double ticks_per_us = TscMap(first_pair, sample_clock_pair()).ticks_per_ns() * 1e3;
        for (const auto& [request, store] : latency_tsc_)
            stats_.latency_us.push_back((double(store) - double(request)) / ticks_per_us);
        std::fprintf(stderr, "freeze: vcpu-state: %s\n", stats_.summary().c_str());
        if (!c.vcpu_state_latency_json.empty())
            write_json_file("--vcpu-state-latency-json", c.vcpu_state_latency_json, stats_.json(c.vcpu_state));
    }

private:
    std::unique_ptr<VcpuStateWriter> words_;
    PublishStats stats_;
    std::vector<std::pair<uint64_t, uint64_t>> latency_tsc_;  // (request, store)
};

// The record (--out): each thawed window's row, written once its thread has run again, with the
// effective window that the threads' own sched_switch events (in TSC) and perf switch records
// give it.
class EffectiveWindows {
public:
    EffectiveWindows(Session& session, const std::vector<int>& tids, const std::string& out_csv)
        : trace_(session.ledger(), session.owner(), "effective", "x86-tsc", tids, 512),
          records_(open_switch_records(tids)),
          out_(open_output(out_csv)),
          closer_(out_ == stdout ? nullptr : out_, &std::fclose) {
        std::fputs(freeze_record_header().c_str(), out_);
        std::fflush(out_);
        writer_ = std::make_unique<RecordWriter>(out_);
    }

    void start() {
        if (records_) records_->enable();
        first_pair_ = sample_clock_pair();
        raw_first_ = sample_clock_pair(CLOCK_MONOTONIC_RAW);
        trace_.start();
    }

    void thawed(const Unfinished& window) { unfinished_.push_back(window); }
    bool all_written() const { return unfinished_.empty(); }

    // Reads the trace and writes every record whose thread has run again (all of them when
    // `final`), in the order the windows ended.
    void drain(std::deque<Victim>& victims, bool final) {
        if (records_) records_->drain();  // before the trace (effective_window.h)
        parser_.feed(trace_.read_available());
        if (final) parser_.finish();
        std::vector<SchedSwitch> events = parser_.take_events();
        for (Victim& v : victims) v.switches.add(events);
        if (records_) add_recorded_ins(victims);
        if (unfinished_.empty()) return;
        TscMap map(first_pair_, sample_clock_pair());
        auto to_ns = [&](uint64_t tsc) { return map.to_ns(tsc); };
        while (!unfinished_.empty()) {
            Unfinished& u = unfinished_.front();
            ThreadSwitches& sw = u.victim->switches;
            if (!final && !sw.resumed_after(u.record.end_tsc)) break;
            u.record.effective = sw.window(u.record.begin_tsc, u.record.marked_tsc, u.record.end_tsc,
                                           u.record.frozen_tsc);
            u.record.planned_begin_tsc = map.to_tsc(u.planned_begin_ns);
            u.record.planned_end_tsc = map.to_tsc(u.planned_end_ns);
            written_.push_back(u.record);
            writer_->write(format_freeze_record(u.record, to_ns));
            sw.drop_before(u.record.end_tsc);
            unfinished_.pop_front();
        }
    }

    // Stops the trace and writes every record left, each row before the summary.
    void finish(std::deque<Victim>& victims) {
        trace_.stop();
        if (records_) records_->disable();
        drain(victims, true);
        writer_.reset();
    }

    const std::vector<FreezeRecord>& written() const { return written_; }
    const ClockPair& first_pair() const { return first_pair_; }

    // Warns of what the kernel lost; true when sched_switch events were (the windows around
    // the loss may be wrong).
    bool warn_of_losses() const {
        if (records_ && records_->lost()) {
            std::fprintf(stderr, "freeze: WARNING the kernel lost %llu perf switch records; a window whose switch-in "
                         "the trace also lacks ends at its thaw request\n",
                         static_cast<unsigned long long>(records_->lost()));
        }
        if (!parser_.lost_events()) return false;
        std::fprintf(stderr, "freeze: WARNING the kernel lost %llu sched_switch events; effective "
                     "windows around the loss may be wrong\n",
                     static_cast<unsigned long long>(parser_.lost_events()));
        return true;
    }

private:
    void add_recorded_ins(std::deque<Victim>& victims) {
        // CLOCK_MONOTONIC_RAW -> TSC between the first pair and now: every record is inside.
        TscMap raw_map(raw_first_, sample_clock_pair(CLOCK_MONOTONIC_RAW));
        std::map<int, std::vector<uint64_t>> ins;
        for (const SwitchRecord& r : records_->take_records())
            if (r.in) ins[r.tid].push_back(raw_map.to_tsc(r.ts));
        for (Victim& v : victims) v.switches.add_recorded_ins(ins[v.target.tid]);
    }

    TraceInstance trace_;
    std::unique_ptr<SwitchRecorder> records_;
    SchedSwitchParser parser_;
    FILE* out_;
    std::unique_ptr<FILE, int (*)(FILE*)> closer_;
    std::unique_ptr<RecordWriter> writer_;  // made before the priority: it stays SCHED_OTHER
    ClockPair first_pair_{}, raw_first_{};
    std::deque<Unfinished> unfinished_;
    std::vector<FreezeRecord> written_;
};

// One victim per target, each in its own freezer cgroup, with its first window drawn.
std::deque<Victim> make_victims(const std::vector<ThreadTarget>& targets, ThreadCgroups& cgroups,
                                const CgroupChoice& choice, const ScheduleParams& schedule) {
    std::deque<Victim> victims;
    for (size_t i = 0; i < targets.size(); ++i) {
        std::string dir = cgroups.add(targets[i]);
        Victim& v = victims.emplace_back(targets[i], std::make_unique<CgroupFreezer>(dir, choice.version),
                                         FreezeSchedule(schedule, i), 0);
        v.window = v.schedule.next();
    }
    return victims;
}

// Freezes and thaws the victims, each on its own schedule, until the end or a stop.
class Injector {
public:
    Injector(Session& session, EffectiveWindows& windows, FrozenWords& words, WriteEstimate& thaw_writes,
             std::deque<Victim> victims)
        : session_(session), windows_(windows), words_(words), thaw_writes_(thaw_writes),
          victims_(std::move(victims)) {}

    // Victim i's schedule starts at origin + i * stagger_ns / N.
    void start_at(uint64_t origin, uint64_t stagger_ns) {
        for (size_t i = 0; i < victims_.size(); ++i)
            victims_[i].origin_ns = origin + stagger_ns * i / victims_.size();
    }

    // Until `end` (0: none) or a stop; then thaws anything still frozen and gives the threads a
    // moment to run again.
    void run(uint64_t end) {
        for (;;) {
            auto next = std::min_element(victims_.begin(), victims_.end(),
                                         [](const Victim& a, const Victim& b) {
                                             return a.next_event_ns() < b.next_event_ns();
                                         });
            uint64_t when = next->next_event_ns();
            // A window that has not begun by the end is not started; one in progress ends early.
            if (end && !next->frozen && when + next->window.length_ns > end) when = end;
            if (end && when > end) when = end;
            if (next_drain_ns_ && next_drain_ns_ < when) {
                if (session_.wait_until(next_drain_ns_) == Wake::kStop) break;
                windows_.drain(victims_, false);
                next_drain_ns_ = windows_.all_written() ? 0 : monotonic_ns() + kDrainPeriodNs;
                continue;
            }
            if (session_.wait_until(when) == Wake::kStop) break;
            if (end && monotonic_ns() >= end && !next->frozen) break;
            Victim& v = *next;
            if (v.frozen) {
                thaw(v);
                v.window = v.schedule.next();
                continue;
            }
            freeze(v, end);
        }
        for (Victim& v : victims_) {
            if (v.frozen) thaw(v);
        }
        const uint64_t until = monotonic_ns() + kFinalResumeWaitNs;
        while (!windows_.all_written() && monotonic_ns() < until) {
            ::usleep(5'000);
            windows_.drain(victims_, false);
        }
    }

    std::deque<Victim>& victims() { return victims_; }
    uint64_t freezes() const { return seq_; }

private:
    void freeze(Victim& v, uint64_t end) {
        v.open = FreezeRecord{};
        v.open.seq = seq_++;
        v.open.tid = v.target.tid;
        v.open.vcpu = v.target.vcpu;
        v.open.begin_tsc = read_tsc();
        v.freezer->freeze();
        v.open.marked_tsc = read_tsc();
        const uint64_t marked_ns = monotonic_ns();
        words_.publish(v.target, true, v.open.begin_tsc);  // after the mark: the word never leads it
        v.frozen = true;
        // Every freeze lasts its length from the moment its mark has surely landed (the write
        // returned) to the moment the thaw write returns: a late request or a slow freeze write
        // moves the thaw, and the thaw is asked for the estimated thaw write earlier.
        v.planned_begin_ns = v.origin_ns + v.window.start_ns;
        v.planned_end_ns = v.planned_begin_ns + v.window.length_ns;
        v.thaw_at_ns = marked_ns + v.window.length_ns - thaw_lead_ns(thaw_writes_, v.window.length_ns);
        if (end) v.thaw_at_ns = std::min(v.thaw_at_ns, end);
        if (v.freezer->wait_frozen(v.thaw_at_ns, session_.signal_fd())) v.open.frozen_tsc = read_tsc();
        // The thread is stopped now (or we gave up): reading the trace cannot disturb it.
        windows_.drain(victims_, false);
    }

    void thaw(Victim& v) {
        v.open.end_tsc = read_tsc();
        const uint64_t asked_ns = monotonic_ns();
        v.freezer->thaw();
        v.open.thawed_tsc = read_tsc();
        thaw_writes_.add(monotonic_ns() - asked_ns);
        words_.publish(v.target, false, v.open.end_tsc);  // after the thaw: the word never leads it
        v.frozen = false;
        windows_.thawed({&v, v.open, v.planned_begin_ns, v.planned_end_ns});
        if (!next_drain_ns_) next_drain_ns_ = monotonic_ns() + kDrainPeriodNs;
    }

    Session& session_;
    EffectiveWindows& windows_;
    FrozenWords& words_;
    WriteEstimate& thaw_writes_;
    std::deque<Victim> victims_;
    uint64_t seq_ = 0;
    uint64_t next_drain_ns_ = 0;
};

// The summary line on stderr; returns the freezer's latencies for --latency-json.
FreezeLatency say_summary(Session& session, uint64_t freezes, const EffectiveWindows& windows) {
    std::vector<size_t> status_counts(4, 0);
    FreezeLatency latency(TscMap(windows.first_pair(), sample_clock_pair()).ticks_per_ns() * 1e6);
    for (const FreezeRecord& r : windows.written()) {
        ++status_counts[static_cast<size_t>(r.effective.status)];
        latency.add(r);
    }
    std::fprintf(stderr, "freeze: %llu freeze(s); effective windows: %zu ok, %zu never-stopped, "
                 "%zu not-resumed, %zu no-events; %s%s%s\n",
                 static_cast<unsigned long long>(freezes), status_counts[0], status_counts[1],
                 status_counts[2], status_counts[3], latency.summary().c_str(),
                 session.stopped() ? "; stopped by " : "", session.stop_reason().c_str());
    return latency;
}
}  // namespace

void validate_freeze(const FreezeConfig& c) {
    validate_target_spec(c.targets);
    validate_schedule(c.schedule);
    if (c.duration_s < 0) throw LoadError("--duration must not be negative");
    if (c.start_delay_s < 0) throw LoadError("--start-delay must not be negative");
    if (c.rt_priority < 0 || c.rt_priority > 99) throw LoadError("--rt-priority must be 0..99");
    if (!c.vcpu_state_latency_json.empty() && c.vcpu_state.empty())
        throw LoadError("--vcpu-state-latency-json needs --vcpu-state");
}

int run_freeze(Session& session, const FreezeConfig& c) {
    validate_freeze(c);
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
    EffectiveWindows windows(session, tids, c.out_csv);  // its writer before the priority: SCHED_OTHER
    // Timers fire late by the timer slack (50 us by default); windows should be exact.
    ::prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);
    FrozenWords words(c.vcpu_state, targets);
    auto facts = priority_facts(c.rt_priority, set_rt_priority(c.rt_priority));
    for (auto& fact : freezer_facts(choice, key.has_value(), calibrated)) facts.push_back(std::move(fact));

    Injector injector(session, windows, words, thaw_writes, make_victims(targets, cgroups, choice, c.schedule));
    windows.start();
    // The schedule starts once everything is set up (moving threads between cgroups can take
    // tens of ms under load, which made first windows late).
    const uint64_t origin = monotonic_ns() + static_cast<uint64_t>(c.start_delay_s * 1e9) + 20'000'000;
    injector.start_at(origin, c.stagger ? c.schedule.period_ns : 0);
    std::fprintf(stderr, "freeze: %zu thread(s) via cgroup %s at %s%s; freezer writes (empty cgroup, median of %zu): "
                 "freeze %.4f ms, thaw %.4f ms\n", targets.size(),
                 choice.version == CgroupVersion::kV1 ? "v1 freezer" : "v2 cgroup.freeze",
                 choice.mount.c_str(), key ? ", its static key held on" : "", calibrated.cycles,
                 static_cast<double>(calibrated.freeze_ns) / 1e6, static_cast<double>(calibrated.thaw_ns) / 1e6);
    words.say_unattached();
    session.mark_ready(facts);

    injector.run(c.duration_s > 0 ? origin + static_cast<uint64_t>(c.duration_s * 1e9) : 0);
    windows.finish(injector.victims());
    const FreezeLatency latency = say_summary(session, injector.freezes(), windows);
    words.finish(c, windows.first_pair());
    if (!c.latency_json.empty()) write_json_file("--latency-json", c.latency_json, latency.json());
    return windows.warn_of_losses() ? 2 : 0;
}

}  // namespace spinlab::load
