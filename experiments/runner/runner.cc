// experiments/runner/runner.cc: see runner.h. The experiment's loop; its rooms are vm.h (the
// VM), conditions.h (host conditions), timeline_recording.h, window.h (counters and clock of one
// repetition), meta.h and results.h (the files), progress.h and signals.h.
#include "runner.h"

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include "conditions.h"
#include "hostlib/error.h"
#include "hostlib/host_tsc.h"
#include "kvm_stats.h"
#include "neighbours.h"
#include "meta.h"
#include "pinning.h"
#include "progress.h"
#include "results.h"
#include "signals.h"
#include "timeline_recording.h"
#include "trace/trace_text.h"
#include "trace_exports.h"
#include "vm.h"
#include "window.h"
#include "wrk_summary.h"

namespace fs = std::filesystem;

namespace spinlab::run {
namespace {

using Clock = std::chrono::steady_clock;

// Why a wait ended early.
enum class Stop { kNone, kSignal, kVmGone, kConditionGone };

std::chrono::milliseconds seconds(double s) { return std::chrono::milliseconds(long(s * 1000)); }

// "20250101-120001" for 2025-01-01T12:00:01Z.
std::string default_run_id() {
    std::string id;
    for (char c : iso_utc(collect::realtime_ns()))
        if (c == 'T') id += '-';
        else if (c >= '0' && c <= '9') id += c;
    return id;
}

class Experiment {
public:
    Experiment(const Spec& spec, const Tools& tools, std::ostream& out, std::ostream& err)
        : spec_(spec), tools_(tools), out_(out), err_(err),
          progress_(err, isatty(STDERR_FILENO)) {}

    int run();

private:
    void start_vms(const std::string& vm_name);
    int run_plan(std::string& reason);
    int finish(int code, std::string reason);
    Stop one_repetition(const Phase& p, uint32_t rep);
    Condition start_repetition_condition(const Phase& p, uint32_t rep, const std::string& at);
    void start_timeline(const std::string& phase, uint32_t rep, const Condition& cond, const std::string& at);
    Stop measure(const std::string& phase, uint32_t rep, const std::string& at, Condition& cond,
                 SnapshotRecord* rec);
    void sample_kvm(const std::string& phase, uint32_t rep, const std::string& at, const std::string& when);
    void keep_repetition(const std::string& phase, uint32_t rep, const std::string& at, Condition& cond,
                         const SnapshotRecord& rec);
    Stop wait(Clock::time_point until, Condition* cond, const std::function<void()>& tick);
    void check_condition(Stop s, const Condition& cond, const std::string& at, const char* when);
    void write_status(bool complete, const std::string& reason);
    collect::ClockFit write_clock();  // also returns the fit (ok false: none yet); halts.csv too
    std::string clock_error_noted_;   // the sampler's error, once said
    void write_halts();
    std::set<uint32_t> halt_refusals_noted_;  // CPUs whose halt log's refusal was said
    std::string halt_error_noted_;            // the halt recorder's error, once said
    void note(const std::string& line) { progress_.message("spinlab-run: " + line); }
    ProgressState progress_state(const std::string& step) const;
    double elapsed() const {
        return std::chrono::duration<double>(Clock::now() - started_).count();
    }

    const Spec& spec_;
    const Tools& tools_;
    std::ostream& out_;
    std::ostream& err_;
    Progress progress_;
    Clock::time_point started_ = Clock::now();

    std::string dir_;  // results/<run-id>
    std::string run_id_;
    std::unique_ptr<Vm> vm_;
    std::unique_ptr<Timeline> timeline_;
    std::unique_ptr<Neighbours> neighbours_;  // a run with neighbours-N phases: their VMs (neighbours.h)
    std::vector<Slot> plan_;
    std::vector<Done> done_;
    std::vector<collect::ClockSample> clock_samples_;
    Meta meta_;  // meta.json as written; again when a freeze condition tells its priority
    uint64_t host_tsc_hz_ = 0;  // meta.json's: the rate of clock.json's host side
    size_t slot_index_ = 0;
    double live_ops_ = -1;
    std::string live_unit_ = kAcquisitionsUnit;
    double setup_s_ = 0;  // seconds spent before the first repetition (VM boot)
    WrkSummary wrk_;      // the repetitions kept, for the table a timing=all run ends with
};

ProgressState Experiment::progress_state(const std::string& step) const {
    ProgressState s;
    const Slot& slot = plan_[std::min(slot_index_, plan_.size() - 1)];
    s.phase = spec_.run.phases[slot.phase].name();
    s.rep = slot.rep;
    s.repetitions = spec_.run.repetitions;
    s.slot = uint32_t(slot_index_ + 1);
    s.slots = uint32_t(plan_.size());
    s.step = step;
    s.elapsed_s = elapsed();
    // Each repetition takes its warm-up and duration plus about 2 s of starting and stopping.
    double per_slot = spec_.run.warmup_s + spec_.run.duration_s + 2;
    double into_run = elapsed() - setup_s_;
    double total = per_slot * double(plan_.size());
    s.remaining_s = std::max(0.0, total - into_run);
    s.ops_per_s = live_ops_;
    s.unit = live_unit_;
    return s;
}

void Experiment::write_status(bool complete, const std::string& reason) {
    if (dir_.empty()) return;
    try {
        write_file(dir_ + "/status.json", status_json(complete, reason, done_));
    } catch (const std::exception& e) {
        note(std::string("cannot write status.json: ") + e.what());
    }
}

// halts.csv, the guest's halt spans so far (collector/halt_log.h), when some CPU records them;
// a refused CPU log and a recorder that stopped are said once each.
void Experiment::write_halts() {
    vm_->drain_halts();  // the recorder drains at the guest's pace, up to 250 ms apart
    const std::vector<collect::CpuHalts> halts = vm_->halts();
    for (const collect::CpuHalts& h : halts)
        if (h.refused_from && halt_refusals_noted_.insert(h.cpu).second)
            note("the guest's halt log was refused: " + h.refusal + " (halts.csv: nothing of CPU " +
                 std::to_string(h.cpu) + " from guest TSC " + std::to_string(*h.refused_from) +
                 " on; what was read before is kept)");
    if (std::string why = vm_->halt_recorder_error(); !why.empty() && why != halt_error_noted_) {
        note("the guest's halt recording stopped: " + why +
             " (halts.csv: every CPU's halts lost from its last read on)");
        halt_error_noted_ = why;
    }
    if (records_halts(halts)) write_file(dir_ + "/halts.csv", halts_csv(halts));
}

collect::ClockFit Experiment::write_clock() {
    write_halts();  // whether or not a fit can be made yet: it is kept all the same
    if (std::string why = vm_->clock_sampler_error(); !why.empty() && why != clock_error_noted_) {
        note("the clock sampling throughout the run stopped: " + why + " (only the windows' samples are fitted)");
        clock_error_noted_ = why;
    }
    std::vector<collect::ClockSample> all = vm_->clock_samples();  // throughout the run
    // At the ends of each window, unless the sampler has that publication too (placed through
    // the guest's reference: a placed sample and a bracket of one publication are one point).
    std::set<uint64_t> seen;
    for (const auto& s : all) seen.insert(s.guest_tsc);
    for (const auto& s : clock_samples_)
        if (!seen.count(s.guest_tsc)) all.push_back(s);
    if (all.size() < 2) return {};
    collect::ClockFit fit = collect::fit_clock(all);
    if (!fit.ok) return fit;
    fit.host_tsc_hz = host_tsc_hz_;
    write_file(dir_ + "/clock.json", clock_json(fit, vm_->clock_sampling()));
    return fit;
}

Stop Experiment::wait(Clock::time_point until, Condition* cond, const std::function<void()>& tick) {
    while (Clock::now() < until) {
        if (pending_signal()) return Stop::kSignal;
        if (!vm_->alive()) return Stop::kVmGone;
        if (cond && cond->child && !cond->child->running()) return Stop::kConditionGone;
        if (cond && cond->neighbours && !cond->neighbours->alive(nullptr)) return Stop::kConditionGone;
        if (tick) tick();
        auto step = std::min(until, Clock::now() + std::chrono::milliseconds(250));
        std::this_thread::sleep_until(step);
    }
    return pending_signal() ? Stop::kSignal : Stop::kNone;
}

// A condition that ended by itself invalidates the repetition: the run stops saying so.
void Experiment::check_condition(Stop s, const Condition& cond, const std::string& at,
                                 const char* when) {
    std::string why;
    if (s == Stop::kConditionGone && cond.neighbours && !cond.neighbours->alive(&why))
        throw std::runtime_error(why + " (" + at + ", " + when + ")");
    if (s == Stop::kConditionGone)
        throw std::runtime_error(cond.what + " for " + at + " " +
                                 Child::describe(*cond.child->poll()) + " " + when);
}

Stop Experiment::one_repetition(const Phase& p, uint32_t rep) {
    const std::string phase = p.name();
    const std::string at = phase + " r" + std::to_string(rep);
    Condition cond = start_repetition_condition(p, rep, at);
    progress_.show(progress_state("warm-up"), true);
    Stop s = wait(Clock::now() + seconds(spec_.run.warmup_s), &cond,
                  [&] { progress_.show(progress_state("warm-up")); });
    check_condition(s, cond, at, "during the warm-up");
    if (s != Stop::kNone) return s;
    start_timeline(phase, rep, cond, at);
    SnapshotRecord rec;
    if (s = measure(phase, rep, at, cond, &rec); s != Stop::kNone) return s;
    keep_repetition(phase, rep, at, cond, rec);
    return Stop::kNone;
}

// The repetition's host condition, from before its warm-up, and what it tells meta.json.
Condition Experiment::start_repetition_condition(const Phase& p, uint32_t rep, const std::string& at) {
    // Neighbours run only in the neighbours-N repetitions that use them (neighbours.h).
    if (neighbours_ && neighbours_->running())
        if (std::string problem = neighbours_->pause(); !problem.empty()) note(at + ": " + problem);
    Condition cond = start_condition(p, rep, spec_.run, tools_.spinlab_load, vm_->info(), dir_);
    if (p.kind == PhaseKind::kNeighbours) {  // like a hog: up before the warm-up
        cond.what = std::to_string(p.neighbours) + " neighbour VM(s)";
        cond.neighbours = neighbours_.get();
        progress_.show(progress_state(neighbours_->booted() >= p.neighbours ? "resuming neighbours" : "starting neighbours"),
                       true);
        neighbours_->run(p.neighbours, [&](const std::string& line) { note(at + ": " + line); });
    }
    if (note_freezer(meta_, p.name() + "-r" + std::to_string(rep), cond.facts))
        write_file(dir_ + "/meta.json", meta_json(meta_));
    if (note_injector_priority(meta_, cond.facts)) {
        write_file(dir_ + "/meta.json", meta_json(meta_));
        if (!meta_.freeze_rt_priority.fallback.empty())
            note(at + ": the freeze injector runs at normal priority, not SCHED_FIFO " +
                 std::to_string(meta_.freeze_rt_priority.asked) + " (" + meta_.freeze_rt_priority.fallback +
                 "; recorded in meta.json)");
    }
    return cond;
}

void Experiment::start_timeline(const std::string& phase, uint32_t rep, const Condition& cond,
                                const std::string& at) {
    if (std::string failed = timeline_->start(phase, rep, vm_->info(), cond.freeze_csv,
                                              cond.neighbours ? cond.neighbours->vcpu_threads() : NeighbourThreads{});
        !failed.empty())
        note(failed + " (continuing without it)");
    if (!timeline_->source().empty() && timeline_->source() != meta_.timeline_source) {
        meta_.timeline_source = timeline_->source();
        write_file(dir_ + "/meta.json", meta_json(meta_));
        if (meta_.timeline_source == "perf")
            note(at + ": the timeline comes from the vCPU threads' perf switch records (tracefs is not open to "
                 "this user; recorded in meta.json)");
    }
}

// The measured window: the guest's counters (and trace) from its start to its end, in *rec.
Stop Experiment::measure(const std::string& phase, uint32_t rep, const std::string& at, Condition& cond,
                         SnapshotRecord* rec) {
    const std::string base = "snapshots/" + phase + "-r" + std::to_string(rep);
    sample_kvm(phase, rep, at, "start");
    // The neighbours' windows around the measured one's start and end snapshots (each VM's
    // throughput is over its own window, which it records).
    if (cond.neighbours) cond.neighbours->open_windows(phase, rep);
    Window window(vm_->guest(), spec_, phase, rep, clock_samples_, dir_, base + ".trace");
    Stop s = wait(window.opened() + seconds(spec_.run.duration_s), &cond, [&] {
        window.poll();
        live_ops_ = window.live_ops_per_s();
        live_unit_ = window.live_unit();
        progress_.show(progress_state("measuring"));
    });
    check_condition(s, cond, at, "while measuring");
    if (s != Stop::kNone) return s;
    if (cond.neighbours)
        if (std::string problem = cond.neighbours->close_windows(); !problem.empty())
            note(at + ": neighbour counters: " + problem);
    *rec = window.close();
    sample_kvm(phase, rep, at, "end");
    if (rec->trace && (rec->trace->totals.events_lost || rec->trace->totals.log_buffers_lost ||
                       rec->trace->totals.realtime_buffers_lost || rec->trace->damaged_frames))
        note(at + ": the trace lost events: " + collect::trace_counters_line(rec->trace->totals) +
             (rec->trace->damaged_frames ? ", " + std::to_string(rec->trace->damaged_frames) + " damaged frames" : ""));
    return Stop::kNone;
}

// KVM's per-vCPU counters just before the window opens and just after it closes
// (kvm_stats.h); under TCG there are none.
void Experiment::sample_kvm(const std::string& phase, uint32_t rep, const std::string& at, const std::string& when) {
    if (vm_->info().accel != "kvm") return;
    if (std::string problem = sample_kvm_stats(tools_.spinlab_vm, vm_->name(), dir_, kvm_stats_file(phase, rep, when));
        !problem.empty())
        note(at + ": KVM statistics (" + when + "): " + problem);
}

// Ends the repetition's condition and timeline and keeps what it measured.
void Experiment::keep_repetition(const std::string& phase, uint32_t rep, const std::string& at, Condition& cond,
                                 const SnapshotRecord& rec) {
    // The condition first: its freeze record is complete once it has ended, and the timeline
    // reads it when it stops.
    if (cond.child) cond.child->stop();
    if (cond.neighbours)
        if (std::string problem = cond.neighbours->pause(); !problem.empty()) note(at + ": " + problem);
    timeline_->stop();
    const std::string base = "snapshots/" + phase + "-r" + std::to_string(rep);
    write_file(dir_ + "/" + base + ".json", snapshot_json(rec));
    if (std::string problem = timeline_->keep(phase, rep); !problem.empty()) note(problem);
    done_.push_back({phase, rep});
    wrk_.add(phase, rec.counters);
    const collect::ClockFit fit = write_clock();
    if (rec.trace && !spec_.trace.exports.empty()) {
        const std::string name = phase + "-r" + std::to_string(rep);
        if (std::string problem = export_repetition(dir_, name, spec_.trace.exports, &fit); !problem.empty())
            note(at + ": trace export: " + problem);
    }
}

int Experiment::run() {
    install_signal_handlers();
    plan_ = build_schedule(uint32_t(spec_.run.phases.size()), spec_.run.repetitions,
                           spec_.run.order, spec_.run.seed);
    const std::string vm_name = !spec_.vm.attach.empty() ? spec_.vm.attach
                                : !spec_.vm.name.empty() ? spec_.vm.name
                                                         : "run" + std::to_string(getpid());
    run_id_ = spec_.output.run_id.empty() ? default_run_id() : spec_.output.run_id;
    try {
        dir_ = make_run_dir(spec_.output.dir, run_id_);
        fs::create_directories(dir_ + "/logs");
        write_file(dir_ + "/spec.ini", to_ini(spec_));
    } catch (const std::exception& e) {
        err_ << "spinlab-run: " << e.what() << "\n";
        return kRunUsage;
    }
    out_ << dir_ << "\n" << std::flush;
    write_status(false, "starting: nothing measured yet");
    vm_ = std::make_unique<Vm>(spec_, tools_.spinlab_vm, vm_name, dir_);
    timeline_ = std::make_unique<Timeline>(spec_.run.timeline, spec_.run.vcpu_state, tools_.spinlab_load, dir_);
    if (max_neighbours(spec_) > 0)
        neighbours_ = std::make_unique<Neighbours>(spec_, tools_.spinlab_vm, vm_->name(), dir_);

    int code = kRunComplete;
    std::string reason;
    try {
        start_vms(vm_name);
        code = run_plan(reason);
    } catch (const collect::CollectError& e) {
        reason = e.what();
        code = e.exit_code() == collect::kExitAbi       ? kRunAbi
               : done_.empty() && !vm_->has_guest()     ? kRunNoVm
                                                        : kRunPartial;
    } catch (const std::exception& e) {
        reason = e.what();
        code = kRunPartial;
    }
    return finish(code, reason);
}

// The measured VM and the neighbours, booted; meta.json written.
void Experiment::start_vms(const std::string& vm_name) {
    // The neighbours boot beside the measured VM, then wait paused for their phases.
    prepare_guest(spec_, tools_.spinlab_vm, dir_, [&](const std::string& line) { note(line); });
    if (neighbours_) neighbours_->launch(max_neighbours(spec_));
    vm_->start([&](const std::string& line) { note(line); });
    if (neighbours_) {
        progress_.show(progress_state("starting neighbours"), true);
        neighbours_->run(max_neighbours(spec_), [&](const std::string& line) { note(line); });
        if (std::string problem = neighbours_->pause(); !problem.empty()) note(problem);
    }
    meta_ = make_meta({spec_, plan_, run_id_, vm_name, tools_.source_dir, vm_->info(), vm_->guest()});
    host_tsc_hz_ = meta_.host.tsc_hz;
    write_file(dir_ + "/meta.json", meta_json(meta_));
    setup_s_ = elapsed();
}

// Every repetition of the plan in order, until one is stopped: kRunComplete, or kRunPartial
// with the reason.
int Experiment::run_plan(std::string& reason) {
    for (slot_index_ = 0; slot_index_ < plan_.size(); ++slot_index_) {
        const Slot& slot = plan_[slot_index_];
        const Phase& p = spec_.run.phases[slot.phase];
        const std::string at = p.name() + " r" + std::to_string(slot.rep);
        write_status(false, "running: " + std::to_string(done_.size()) + " of " +
                                std::to_string(plan_.size()) + " repetitions done, now " + at);
        Stop s = one_repetition(p, slot.rep);
        if (s == Stop::kSignal) {
            reason = "interrupted by " + signal_name(pending_signal()) + " during " + at;
            return kRunPartial;
        }
        if (s == Stop::kVmGone) {
            reason = "the VM died during " + at + ": " + vm_->why_gone();
            return kRunPartial;
        }
    }
    return kRunComplete;
}

// Every exit path: the VM goes (children of conditions were stopped by their owners), and the
// run's status, table and last words say how it ended.
int Experiment::finish(int code, std::string reason) {
    progress_.clear();
    ignore_signals();
    timeline_->stop();
    if (neighbours_) neighbours_->stop();
    vm_->stop();
    if (code == kRunComplete) {
        reason = "all " + std::to_string(plan_.size()) + " repetitions done";
        if (!timeline_->off_reason().empty()) reason += "; " + timeline_->off_reason();
    } else {
        reason += " (" + std::to_string(done_.size()) + " of " + std::to_string(plan_.size()) +
                  " repetitions kept)";
    }
    write_status(code == kRunComplete, reason);
    if (timing_all(spec_) && !done_.empty()) {  // the original experiment's table (wrk_summary.h)
        std::vector<std::string> order;
        for (const Phase& p : spec_.run.phases) order.push_back(p.name());
        out_ << "\n" << wrk_.text(order) << std::flush;
    }
    err_ << "spinlab-run: " << (code == kRunComplete ? "complete: " : "partial: ") << reason
         << "\nspinlab-run: results in " << dir_ << "\n";
    return code;
}

}  // namespace

Tools find_tools(const Locations& where) {
    Tools t;
    t.source_dir = where.source_dir;
    const char* vm = getenv("SPINLAB_VM");
    t.spinlab_vm = vm && *vm ? vm : where.bin_dir + "/spinlab-vm";
    const char* load = getenv("SPINLAB_LOAD");
    t.spinlab_load = load && *load ? load : where.bin_dir + "/spinlab-load";
    if (access(t.spinlab_vm.c_str(), X_OK) != 0)
        throw SpecError("spinlab-vm not found at " + t.spinlab_vm + " (set SPINLAB_VM)");
    if (access(t.spinlab_load.c_str(), X_OK) != 0)
        throw SpecError("spinlab-load not found at " + t.spinlab_load +
                        " (build it: make build; or set SPINLAB_LOAD)");
    return t;
}

std::string describe_plan(const Spec& spec) {
    std::ostringstream o;
    auto plan = build_schedule(uint32_t(spec.run.phases.size()), spec.run.repetitions,
                               spec.run.order, spec.run.seed);
    o << "kernel command line: " << kernel_append(spec) << "\n";
    o << "order (" << order_name(spec.run.order) << "):";
    for (const Slot& s : plan) o << " " << spec.run.phases[s.phase].name() << "/r" << s.rep;
    double each = spec.run.warmup_s + spec.run.duration_s;
    o << "\n" << plan.size() << " repetitions of " << spec.run.warmup_s << " s warm-up + "
      << spec.run.duration_s << " s measured: about " << format_duration(each * double(plan.size()) + 2 * double(plan.size()))
      << " plus the boot\n";
    return o.str();
}

int run_experiment(const Spec& spec, const Tools& tools, std::ostream& out, std::ostream& err) {
    Experiment e(spec, tools, out, err);
    return e.run();
}

}  // namespace spinlab::run
