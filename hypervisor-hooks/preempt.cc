#include "preempt.h"

#include <sched.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "freezer.h"
#include "fs_util.h"
#include "host_clock.h"

namespace spinlab::load {

namespace {
struct Victim {
    ThreadTarget target;
    std::unique_ptr<CgroupFreezer> freezer;
    FreezeSchedule schedule;
    uint64_t origin_ns;
    FreezeWindow window{};
    bool frozen = false;
    uint64_t begin_ns = 0, begin_tsc = 0, frozen_ns = 0, frozen_tsc = 0;
    uint64_t next_event_ns() const {
        return origin_ns + window.start_ns + (frozen ? window.length_ns : 0);
    }
};

FILE* open_output(const std::string& path) {
    if (path.empty() || path == "-") return stdout;
    FILE* f = std::fopen(path.c_str(), "we");
    if (!f) throw LoadError("--out " + path + ": " + std::strerror(errno));
    return f;
}
}  // namespace

void validate_preempt(const PreemptConfig& c) {
    validate_target_spec(c.targets);
    validate_schedule(c.schedule);
    if (c.duration_s < 0) throw LoadError("--duration must not be negative");
    if (c.start_delay_s < 0) throw LoadError("--start-delay must not be negative");
    if (c.rt_priority < 0 || c.rt_priority > 99) throw LoadError("--rt-priority must be 0..99");
}

int run_preempt(Session& session, const PreemptConfig& c) {
    validate_preempt(c);
    std::vector<ThreadTarget> targets = resolve_targets(c.targets);
    CgroupChoice choice = choose_hierarchy_on_host("freezer", c.method);
    ThreadCgroups cgroups(session.ledger(), session.owner(), "freeze", choice, "freezer");
    // Timers fire late by the timer slack (50 us by default); windows should be exact.
    ::prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);
    if (c.rt_priority > 0) {
        sched_param sp{};
        sp.sched_priority = c.rt_priority;
        if (::sched_setscheduler(0, SCHED_FIFO, &sp) < 0) {
            throw LoadError("--rt-priority " + std::to_string(c.rt_priority) + ": " + std::strerror(errno));
        }
    }
    FILE* out = open_output(c.out_csv);
    std::unique_ptr<FILE, int (*)(FILE*)> closer(out == stdout ? nullptr : out, &std::fclose);
    std::fprintf(out, "seq,tid,vcpu,planned_ns,begin_ns,begin_tsc,frozen_ns,frozen_tsc,end_ns,end_tsc\n");
    std::fflush(out);

    std::vector<Victim> victims;
    uint64_t origin = monotonic_ns() + static_cast<uint64_t>(c.start_delay_s * 1e9) + 20'000'000;
    for (size_t i = 0; i < targets.size(); ++i) {
        std::string dir = cgroups.add(targets[i]);
        uint64_t offset = c.stagger ? c.schedule.period_ns * i / targets.size() : 0;
        Victim v{targets[i], std::make_unique<CgroupFreezer>(dir, choice.version),
                 FreezeSchedule(c.schedule, i), origin + offset};
        v.window = v.schedule.next();
        victims.push_back(std::move(v));
    }
    std::fprintf(stderr, "preempt: %zu thread(s) via cgroup %s at %s\n", victims.size(),
                 choice.version == CgroupVersion::kV1 ? "v1 freezer" : "v2 cgroup.freeze",
                 choice.mount.c_str());
    session.mark_ready();

    const uint64_t end = c.duration_s > 0 ? origin + static_cast<uint64_t>(c.duration_s * 1e9) : 0;
    uint64_t seq = 0, late_max_ns = 0, frozen_total_ns = 0;
    auto thaw_and_record = [&](Victim& v) {
        v.freezer->thaw();
        uint64_t end_ns = monotonic_ns(), end_tsc = read_tsc();
        v.frozen = false;
        frozen_total_ns += end_ns - v.begin_ns;
        std::fprintf(out, "%llu,%d,%d,%llu,%llu,%llu,%llu,%llu,%llu,%llu\n",
                     static_cast<unsigned long long>(seq++), v.target.tid, v.target.vcpu,
                     static_cast<unsigned long long>(v.origin_ns + v.window.start_ns),
                     static_cast<unsigned long long>(v.begin_ns),
                     static_cast<unsigned long long>(v.begin_tsc),
                     static_cast<unsigned long long>(v.frozen_ns),
                     static_cast<unsigned long long>(v.frozen_tsc),
                     static_cast<unsigned long long>(end_ns), static_cast<unsigned long long>(end_tsc));
        std::fflush(out);
    };
    for (;;) {
        auto next = std::min_element(victims.begin(), victims.end(), [](const Victim& a, const Victim& b) {
            return a.next_event_ns() < b.next_event_ns();
        });
        uint64_t when = next->next_event_ns();
        // A window that has not begun by the end is not started; one in progress ends early.
        if (end && !next->frozen && when + next->window.length_ns > end) when = end;
        if (end && when > end) when = end;
        if (session.wait_until(when) == Wake::kStop) break;
        if (end && monotonic_ns() >= end && !next->frozen) break;
        Victim& v = *next;
        if (!v.frozen) {
            v.begin_ns = monotonic_ns();
            v.begin_tsc = read_tsc();
            late_max_ns = std::max(late_max_ns, v.begin_ns - when);
            v.freezer->freeze();
            v.frozen = true;
            v.frozen_ns = v.frozen_tsc = 0;
            // The freeze completes when the thread next enters the kernel; watch for it (tightly
            // for 1 ms, then every 100 us, never past the planned thaw) so the record says when it
            // really stopped.
            const uint64_t spin_until = v.begin_ns + 1'000'000;
            const uint64_t give_up = std::max(spin_until, v.origin_ns + v.window.start_ns + v.window.length_ns);
            for (uint64_t now = v.begin_ns; now < give_up; now = monotonic_ns()) {
                if (v.freezer->frozen()) {
                    v.frozen_ns = monotonic_ns();
                    v.frozen_tsc = read_tsc();
                    break;
                }
                if (now > spin_until) session.wait_until(now + 100'000);
                if (session.stopped()) break;
            }
        } else {
            thaw_and_record(v);
            v.window = v.schedule.next();
        }
    }
    // Thaw anything still frozen before reporting; the ledger undo thaws again regardless.
    for (Victim& v : victims) {
        if (v.frozen) thaw_and_record(v);
    }
    std::fprintf(stderr, "preempt: %llu freeze(s), %.1f ms frozen in total, worst start lateness %.3f ms%s%s\n",
                 static_cast<unsigned long long>(seq), frozen_total_ns / 1e6, late_max_ns / 1e6,
                 session.stopped() ? ", stopped by " : "", session.stop_reason().c_str());
    return 0;
}

}  // namespace spinlab::load
