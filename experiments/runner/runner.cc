// experiments/runner/runner.cc: see runner.h.
#include "runner.h"

#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "child.h"
#include "error.h"
#include "guest.h"
#include "host_tsc.h"
#include "progress.h"
#include "results.h"

namespace fs = std::filesystem;
namespace pt = boost::property_tree;

#ifndef SPINLAB_SOURCE_DIR
#define SPINLAB_SOURCE_DIR "."
#endif

namespace spinlab::run {
namespace {

using Clock = std::chrono::steady_clock;

volatile std::sig_atomic_t g_signal = 0;

void on_signal(int s) { g_signal = s; }

void install_signal_handlers() {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaction(s, &sa, nullptr);
    signal(SIGPIPE, SIG_IGN);
}

std::string signal_name(int s) {
    const char* n = sigabbrev_np(s);
    return std::string("SIG") + (n ? n : std::to_string(s).c_str());
}

std::string read_text(const std::string& path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::string last_line(const std::string& path) {
    std::istringstream in(read_text(path));
    std::string line, last;
    while (std::getline(in, line))
        if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
    return last;
}

// One line of a command's output ("" when it fails).
std::string command_line_output(const std::string& cmd) {
    FILE* p = popen((cmd + " 2>/dev/null").c_str(), "r");
    if (!p) return "";
    char buf[512];
    std::string out;
    if (fgets(buf, sizeof buf, p)) out = buf;
    pclose(p);
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
}

std::string shell_quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

HostInfo host_info() {
    HostInfo h;
    std::istringstream cpu(read_text("/proc/cpuinfo"));
    std::string line;
    while (std::getline(cpu, line))
        if (line.rfind("model name", 0) == 0) {
            h.cpu_model = line.substr(line.find(':') + 2);
            break;
        }
    struct utsname u;
    if (uname(&u) == 0) h.kernel = std::string(u.release) + " " + u.version;
    h.cpus = uint32_t(sysconf(_SC_NPROCESSORS_ONLN));
    // The TSC rate: TSC cycles over 100 ms of CLOCK_MONOTONIC_RAW.
    timespec a, b;
    clock_gettime(CLOCK_MONOTONIC_RAW, &a);
    uint64_t t0 = collect::host_tsc();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    clock_gettime(CLOCK_MONOTONIC_RAW, &b);
    uint64_t t1 = collect::host_tsc();
    double ns = double(b.tv_sec - a.tv_sec) * 1e9 + double(b.tv_nsec - a.tv_nsec);
    h.tsc_hz = uint64_t(std::llround(double(t1 - t0) / ns * 1e9 / 1e5) * 100000);
    return h;
}

std::string git_rev(const std::string& dir) {
    std::string rev = command_line_output("git -C " + shell_quote(dir) + " rev-parse HEAD");
    if (rev.empty()) return "unknown";
    std::string dirty = command_line_output("git -C " + shell_quote(dir) +
                                            " status --porcelain --untracked-files=no | head -1");
    return dirty.empty() ? rev : rev + "-dirty";
}

std::string run_dir() {
    const char* e = getenv("SPINLAB_RUN_DIR");
    return e && *e ? e : collect::kDefaultRunDir;
}

std::string join_ids(const std::vector<uint64_t>& v) {
    std::string s;
    for (uint64_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
    return s;
}

std::string join_u32(const std::vector<uint32_t>& v) {
    std::string s;
    for (uint32_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
    return s;
}

// What spinlab-vm wrote about the VM.
struct VmInfo {
    std::string state;
    std::vector<uint64_t> vcpu_tids;
    std::string accel, backend, qemu_version;
    uint64_t qemu_pid = 0;
};

std::optional<VmInfo> read_vm_json(const std::string& path) {
    std::ifstream f(path);
    if (!f) return std::nullopt;
    try {
        pt::ptree t;
        pt::read_json(f, t);
        VmInfo v;
        v.state = t.get<std::string>("state", "");
        v.accel = t.get<std::string>("accel", "");
        v.backend = t.get<std::string>("backend", "");
        v.qemu_version = t.get<std::string>("qemu_version", "");
        v.qemu_pid = t.get<uint64_t>("qemu_pid", 0);
        if (auto ids = t.get_child_optional("vcpu_thread_ids"))
            for (const auto& [k, id] : *ids) v.vcpu_tids.push_back(id.get_value<uint64_t>());
        return v;
    } catch (const pt::ptree_error&) {
        return std::nullopt;  // being rewritten, or not there yet
    }
}

// Why a wait ended early.
enum class Stop { kNone, kSignal, kVmGone, kConditionGone };

struct Condition {
    std::unique_ptr<Child> child;
    std::string preempt_csv;  // preempt: the freeze record
    std::string what;         // for messages: "spinlab-load hog"
};

class Experiment {
public:
    Experiment(const Spec& spec, const Tools& tools, std::ostream& out, std::ostream& err)
        : spec_(spec), tools_(tools), out_(out), err_(err),
          progress_(err, isatty(STDERR_FILENO)) {}

    int run();

private:
    void start_vm();
    bool vm_alive();
    Stop wait(Clock::time_point until, Condition* cond, const std::function<void()>& tick);
    Condition start_condition(const Phase& p, uint32_t rep);
    std::unique_ptr<Child> start_timeline(const std::string& phase, uint32_t rep, std::string* csv);
    Stop one_repetition(const Phase& p, uint32_t rep);
    void write_status(bool complete, const std::string& reason);
    void write_meta();
    void write_clock();
    void stop_vm();
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

    std::string vm_name_;
    std::string vm_dir_;
    std::string dir_;  // results/<run-id>
    std::string run_id_;
    std::unique_ptr<Child> vm_;
    VmInfo vm_info_;
    std::unique_ptr<Guest> guest_;
    std::vector<Slot> plan_;
    std::vector<Done> done_;
    std::vector<collect::ClockSample> clock_samples_;
    bool timeline_on_ = true;
    std::string timeline_note_;
    size_t slot_index_ = 0;
    double live_ops_ = -1;
    double setup_s_ = 0;  // seconds spent before the first repetition (VM boot)
};

std::string default_run_id() {
    uint64_t ns = collect::realtime_ns();
    time_t t = time_t(ns / 1'000'000'000ull);
    struct tm tm;
    gmtime_r(&t, &tm);
    char buf[32];
    strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
    return buf;
}

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

void Experiment::write_clock() {
    if (clock_samples_.size() < 2) return;
    collect::ClockFit fit = collect::fit_clock(clock_samples_);
    if (!fit.ok) return;
    write_file(dir_ + "/clock.json", clock_json(fit));
}

bool Experiment::vm_alive() {
    if (vm_ && !vm_->running()) return false;
    if (!fs::exists(vm_dir_ + "/vm.json")) return false;
    if (guest_) {
        try {
            if (guest_->region_gone()) return false;
        } catch (const std::exception&) {
            return false;
        }
    }
    return true;
}

void Experiment::start_vm() {
    vm_dir_ = run_dir() + "/vm/" + vm_name_;
    if (!spec_.vm.attach.empty()) {
        if (!fs::exists(vm_dir_ + "/vm.json"))
            throw collect::CollectError(collect::kExitNoVm, "vm.attach = " + spec_.vm.attach +
                                                                ": no such VM (" + vm_dir_ +
                                                                "/vm.json does not exist)");
    } else {
        // `spinlab-vm run` rather than `start`: `start` outlives its caller by design, while
        // `run` is tied to us (PR_SET_PDEATHSIG) and tears the VM down when we die.
        std::vector<std::string> argv{tools_.spinlab_vm, "run", vm_name_, "--quiet",
                                      "--cpus", std::to_string(spec_.vm.cpus),
                                      "--memory", std::to_string(spec_.vm.memory_mb),
                                      "--accel", spec_.vm.accel,
                                      "--backend", spec_.vm.backend,
                                      "--append", kernel_append(spec_),
                                      "--save-console", dir_ + "/logs/console.log"};
        if (!spec_.vm.pin.empty()) argv.insert(argv.end(), {"--pin", join_u32(spec_.vm.pin)});
        if (!spec_.vm.kernel.empty()) argv.insert(argv.end(), {"--kernel", spec_.vm.kernel});
        if (!spec_.vm.initrd.empty()) argv.insert(argv.end(), {"--initrd", spec_.vm.initrd});
        vm_ = std::make_unique<Child>(argv, dir_ + "/logs/vm.log");
    }
    auto deadline = Clock::now() + std::chrono::milliseconds(long(spec_.vm.boot_timeout_s * 1000));
    for (;;) {
        if (g_signal) throw std::runtime_error("interrupted by " + signal_name(g_signal) + " while starting the VM");
        if (vm_ && !vm_->running())
            throw collect::CollectError(collect::kExitNoVm,
                                        "spinlab-vm run " + Child::describe(*vm_->poll()) + ": " +
                                            last_line(dir_ + "/logs/vm.log"));
        auto info = read_vm_json(vm_dir_ + "/vm.json");
        if (info && info->state == "running" && info->vcpu_tids.size() == spec_.vm.cpus) {
            vm_info_ = *info;
            break;
        }
        if (info && info->state == "running" && !spec_.vm.attach.empty())
            throw collect::CollectError(collect::kExitNoVm,
                                        "vm.attach = " + spec_.vm.attach + " has " +
                                            std::to_string(info->vcpu_tids.size()) +
                                            " vCPUs, the spec says vm.cpus = " +
                                            std::to_string(spec_.vm.cpus));
        if (Clock::now() > deadline)
            throw collect::CollectError(collect::kExitNoVm, "the VM did not start within " +
                                                                std::to_string(long(spec_.vm.boot_timeout_s)) + " s");
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    note("VM " + vm_name_ + ": " + std::to_string(spec_.vm.cpus) + " vCPUs (threads " +
         join_ids(vm_info_.vcpu_tids) + "), " + vm_info_.accel + ", " + vm_info_.backend +
         "; waiting for the guest");
    guest_ = std::make_unique<Guest>(vm_name_, run_dir());
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    guest_->wait_ready(std::max(left, std::chrono::milliseconds(1000)), [&] {
        return !g_signal && (!vm_ || vm_->running()) && fs::exists(vm_dir_ + "/vm.json");
    });
    if (g_signal) throw std::runtime_error("interrupted by " + signal_name(g_signal) + " while booting");
}

void Experiment::stop_vm() {
    guest_.reset();
    if (vm_) {
        int st = vm_->stop(std::chrono::seconds(20));
        (void)st;
        vm_.reset();
        // Should `run` have failed to tear down, stop it from outside as well.
        if (fs::exists(vm_dir_)) {
            Child stop({tools_.spinlab_vm, "stop", vm_name_}, dir_.empty() ? "" : dir_ + "/logs/vm.log");
            stop.stop(std::chrono::seconds(30));
        }
    }
}

Stop Experiment::wait(Clock::time_point until, Condition* cond, const std::function<void()>& tick) {
    while (Clock::now() < until) {
        if (g_signal) return Stop::kSignal;
        if (!vm_alive()) return Stop::kVmGone;
        if (cond && cond->child && !cond->child->running()) return Stop::kConditionGone;
        if (tick) tick();
        auto step = std::min(until, Clock::now() + std::chrono::milliseconds(250));
        std::this_thread::sleep_until(step);
    }
    return g_signal ? Stop::kSignal : Stop::kNone;
}

Condition Experiment::start_condition(const Phase& p, uint32_t rep) {
    Condition c;
    if (p.kind == PhaseKind::kIdleHost) return c;
    const std::string stem = p.name() + "-r" + std::to_string(rep);
    const std::string ready = dir_ + "/logs/." + stem + ".ready";
    std::vector<std::string> argv{tools_.spinlab_load};
    // The vCPU threads to act on: by QEMU pid and vCPU index (spinlab-load finds the threads
    // named "CPU n/...", so its records carry the real vCPU index), else by thread id.
    auto targets = [&](const std::vector<uint32_t>& vcpus) {
        std::vector<std::string> a;
        if (vm_info_.qemu_pid) {
            a = {"--qemu-pid", std::to_string(vm_info_.qemu_pid)};
            if (!vcpus.empty()) a.insert(a.end(), {"--vcpus", join_u32(vcpus)});
        } else {
            std::vector<uint64_t> chosen;
            for (size_t i = 0; i < vm_info_.vcpu_tids.size(); ++i)
                if (vcpus.empty() || std::find(vcpus.begin(), vcpus.end(), uint32_t(i)) != vcpus.end())
                    chosen.push_back(vm_info_.vcpu_tids[i]);
            a = {"--tid", join_ids(chosen)};
        }
        return a;
    };
    switch (p.kind) {
        case PhaseKind::kHostLoad:
            argv.insert(argv.end(), {"hog"});
            if (!spec_.run.hog_cpus.empty()) argv.insert(argv.end(), {"--cpus", join_u32(spec_.run.hog_cpus)});
            break;
        case PhaseKind::kPreempt:
            c.preempt_csv = dir_ + "/preempt/" + stem + ".csv";
            fs::create_directories(dir_ + "/preempt");
            argv.push_back("preempt");
            for (const std::string& a : targets(spec_.run.preempt_vcpus)) argv.push_back(a);
            argv.insert(argv.end(), {"--freeze-ms", std::to_string(p.freeze_ms), "--period-ms",
                                     std::to_string(spec_.run.preempt_period_ms), "--seed",
                                     std::to_string(spec_.run.seed), "--out", c.preempt_csv});
            break;
        case PhaseKind::kThrottle:
            argv.push_back("throttle");
            for (const std::string& a : targets(spec_.run.throttle_vcpus)) argv.push_back(a);
            argv.insert(argv.end(), {"--quota-pct", std::to_string(p.quota_pct)});
            break;
        case PhaseKind::kIdleHost:
            break;
    }
    argv.insert(argv.end(), {"--ready-file", ready});
    c.what = "spinlab-load " + argv[1];
    c.child = std::make_unique<Child>(argv, dir_ + "/logs/" + stem + ".log");
    if (!wait_for_file(ready, *c.child, std::chrono::seconds(20))) {
        std::string why = c.child->running() ? "not in effect after 20 s"
                                              : Child::describe(*c.child->poll());
        c.child->stop();
        throw std::runtime_error(c.what + " for " + stem + " " + why + ": " +
                                 last_line(dir_ + "/logs/" + stem + ".log"));
    }
    return c;
}

std::unique_ptr<Child> Experiment::start_timeline(const std::string& phase, uint32_t rep,
                                                  std::string* csv) {
    if (!timeline_on_) return nullptr;
    const std::string stem = phase + "-r" + std::to_string(rep);
    *csv = dir_ + "/logs/timeline-" + stem + ".csv";
    const std::string ready = dir_ + "/logs/.timeline-" + stem + ".ready";
    auto t = std::make_unique<Child>(
        std::vector<std::string>{tools_.spinlab_load, "timeline", "--tid", join_ids(vm_info_.vcpu_tids),
                                 "--out", *csv, "--ready-file", ready},
        dir_ + "/logs/timeline-" + stem + ".log");
    if (!wait_for_file(ready, *t, std::chrono::seconds(20))) {
        std::string why = t->running() ? "not ready after 20 s" : Child::describe(*t->poll());
        t->stop();
        timeline_on_ = false;
        timeline_note_ = "no timeline: spinlab-load timeline " + why + ": " +
                         last_line(dir_ + "/logs/timeline-" + stem + ".log");
        note(timeline_note_ + " (continuing without it)");
        return nullptr;
    }
    return t;
}

Stop Experiment::one_repetition(const Phase& p, uint32_t rep) {
    const std::string phase = p.name();
    Condition cond = start_condition(p, rep);
    progress_.show(progress_state("warm-up"), true);
    Stop s = wait(Clock::now() + std::chrono::milliseconds(long(spec_.run.warmup_s * 1000)), &cond,
                  [&] { progress_.show(progress_state("warm-up")); });
    if (s == Stop::kConditionGone)
        throw std::runtime_error(cond.what + " for " + phase + " r" + std::to_string(rep) + " " +
                                 Child::describe(*cond.child->poll()) + " during the warm-up");
    if (s != Stop::kNone) return s;

    std::string timeline_csv;
    std::unique_ptr<Child> timeline = start_timeline(phase, rep, &timeline_csv);

    // The window: reset, then a baseline reading; the repetition's counts are end - baseline.
    guest_->reset_counters();
    collect::Snapshot baseline = guest_->snapshot();
    SnapshotRecord rec;
    rec.phase = phase;
    rec.rep = rep;
    rec.start = {guest_->guest_tsc_now(), iso_utc(baseline.host_ns)};
    const auto t0 = Clock::now();
    const uint32_t n_samples = spec_.run.clock_samples;
    for (uint32_t i = 0; i < (n_samples + 1) / 2; ++i)
        if (auto cs = guest_->clock_sample()) clock_samples_.push_back(*cs);

    collect::ClassNames names = guest_->class_names();
    // Long waits: the rings (reset above) hold only the last few per CPU, so read them as the
    // window goes; a failed read leaves the record without long waits rather than half of them.
    std::vector<uint64_t> long_wait_seq;
    LongWaits long_waits;
    bool long_waits_ok = guest_->collect_long_waits(names, long_wait_seq, long_waits);
    auto last_tick = Clock::now(), last_poll = Clock::now();
    s = wait(t0 + std::chrono::milliseconds(long(spec_.run.duration_s * 1000)), &cond, [&] {
        if (long_waits_ok && Clock::now() - last_poll >= std::chrono::milliseconds(250)) {
            last_poll = Clock::now();
            long_waits_ok = guest_->collect_long_waits(names, long_wait_seq, long_waits);
        }
        if (Clock::now() - last_tick >= std::chrono::seconds(1)) {
            last_tick = Clock::now();
            collect::Snapshot now = guest_->snapshot();
            double secs = std::chrono::duration<double>(Clock::now() - t0).count();
            auto ops = workload_ops(collect::snapshot_delta(now, baseline), names,
                                    spec_.workload.program, spec_.workload.throughput_classes, secs);
            if (!ops.empty()) live_ops_ = ops.begin()->second.ops_per_s;
        }
        progress_.show(progress_state("measuring"));
    });
    if (s == Stop::kConditionGone)
        throw std::runtime_error(cond.what + " for " + phase + " r" + std::to_string(rep) + " " +
                                 Child::describe(*cond.child->poll()) + " while measuring");
    if (s != Stop::kNone) return s;

    collect::Snapshot end = guest_->snapshot();
    const auto t1 = Clock::now();
    rec.end = {guest_->guest_tsc_now(), iso_utc(end.host_ns)};
    names = guest_->class_names();
    rec.names = names;
    if (long_waits_ok && guest_->collect_long_waits(names, long_wait_seq, long_waits))
        rec.long_waits = long_waits;
    for (uint32_t i = 0; i < n_samples / 2; ++i)
        if (auto cs = guest_->clock_sample()) clock_samples_.push_back(*cs);
    rec.counters = collect::snapshot_delta(end, baseline);
    // The host's clock measures the window the counters cover (baseline to end reading); the
    // guest's publications in start/end lag it by up to a publication period.
    const double window_s = std::chrono::duration<double>(t1 - t0).count();
    rec.duration_s = window_s;
    rec.workload = workload_ops(rec.counters, names, spec_.workload.program,
                                spec_.workload.throughput_classes, window_s);

    if (timeline) timeline->stop();
    std::vector<Freeze> freezes;
    if (cond.child) {
        cond.child->stop();
        if (!cond.preempt_csv.empty()) {
            try {
                freezes = parse_preempt_csv(read_text(cond.preempt_csv));
            } catch (const std::exception& e) {
                note(std::string("cannot read the freeze record: ") + e.what());
            }
        }
    }
    write_file(dir_ + "/snapshots/" + phase + "-r" + std::to_string(rep) + ".json", snapshot_json(rec));
    if (timeline && fs::exists(timeline_csv)) {
        try {
            std::string rows = convert_timeline(read_text(timeline_csv), phase, rep, freezes);
            const std::string path = dir_ + "/timeline.csv";
            const bool fresh = !fs::exists(path);
            std::ofstream f(path, std::ios::app);
            if (fresh) f << kTimelineHeader;
            f << rows;
        } catch (const std::exception& e) {
            note("timeline of " + phase + " r" + std::to_string(rep) + " left out: " + e.what());
        }
    }
    done_.push_back({phase, rep});
    write_clock();
    return Stop::kNone;
}

void Experiment::write_meta() {
    Meta m;
    m.run_id = run_id_;
    m.date = iso_utc(collect::realtime_ns());
    m.git_rev = git_rev(tools_.source_dir);
    m.host = host_info();
    m.qemu_version = vm_info_.qemu_version;
    if (vm_info_.backend == "libvirt") {
        std::string v = command_line_output("virsh --version");
        m.libvirt_version = v.empty() ? "unknown" : v;
    }
    m.accelerator = vm_info_.accel;
    m.backend = vm_info_.backend;
    m.vcpus = spec_.vm.cpus;
    m.memory_mb = spec_.vm.memory_mb;
    const SystemConfiguration& c = guest_->configuration();
    m.lock = spec_.vm.lock;
    m.clock = contract_clock_name(spec_.vm.clock);
    m.pause = c.pause_enabled != 0;
    m.pinning = spec_.vm.pin.empty() ? "none" : "vCPU i on host CPU " + join_u32(spec_.vm.pin) + "[i]";
    m.guest_tsc_hz = guest_->tsc_hz();
    m.workload = init_line(spec_.workload);
    m.kernel_append = kernel_append(spec_);
    for (const Phase& p : spec_.run.phases) m.phases.push_back(p.name());
    m.repetitions = spec_.run.repetitions;
    m.order = order_name(spec_.run.order);
    m.seed = spec_.run.seed;
    for (const Slot& s : plan_) m.plan.push_back({spec_.run.phases[s.phase].name(), s.rep});
    m.duration_s = spec_.run.duration_s;
    m.warmup_s = spec_.run.warmup_s;
    m.vm_name = vm_name_;
    m.vcpu_thread_ids = vm_info_.vcpu_tids;
    m.guest_build_id = std::string(c.build_id, strnlen(c.build_id, sizeof c.build_id));
    m.guest_hypervisor = std::string(c.hypervisor_signature,
                                     strnlen(c.hypervisor_signature, sizeof c.hypervisor_signature));
    m.runner_version = "spinlab-run format 1";
    write_file(dir_ + "/meta.json", meta_json(m));
}

int Experiment::run() {
    install_signal_handlers();
    plan_ = build_schedule(uint32_t(spec_.run.phases.size()), spec_.run.repetitions,
                           spec_.run.order, spec_.run.seed);
    vm_name_ = !spec_.vm.attach.empty() ? spec_.vm.attach
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

    int code = kRunComplete;
    std::string reason;
    try {
        start_vm();
        write_meta();
        setup_s_ = elapsed();
        for (slot_index_ = 0; slot_index_ < plan_.size(); ++slot_index_) {
            const Slot& slot = plan_[slot_index_];
            const Phase& p = spec_.run.phases[slot.phase];
            write_status(false, "running: " + std::to_string(done_.size()) + " of " +
                                    std::to_string(plan_.size()) + " repetitions done, now " +
                                    p.name() + " r" + std::to_string(slot.rep));
            Stop s = one_repetition(p, slot.rep);
            const std::string at = p.name() + " r" + std::to_string(slot.rep);
            if (s == Stop::kSignal) {
                reason = "interrupted by " + signal_name(g_signal) + " during " + at;
                code = kRunPartial;
                break;
            }
            if (s == Stop::kVmGone) {
                reason = "the VM died during " + at + ": " +
                         (vm_ && vm_->poll() ? "spinlab-vm run " + Child::describe(*vm_->poll())
                                             : std::string("its state directory is gone"));
                code = kRunPartial;
                break;
            }
        }
    } catch (const collect::CollectError& e) {
        reason = e.what();
        code = e.exit_code() == collect::kExitAbi   ? kRunAbi
               : done_.empty() && !guest_           ? kRunNoVm
                                                    : kRunPartial;
    } catch (const std::exception& e) {
        reason = e.what();
        code = kRunPartial;
    }
    progress_.clear();
    // Every exit path: the VM goes (children of conditions were stopped by their owners).
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    stop_vm();
    if (code == kRunComplete) {
        reason = "all " + std::to_string(plan_.size()) + " repetitions done";
        if (!timeline_note_.empty()) reason += "; " + timeline_note_;
    } else {
        reason += " (" + std::to_string(done_.size()) + " of " + std::to_string(plan_.size()) +
                  " repetitions kept)";
    }
    write_status(code == kRunComplete, reason);
    err_ << "spinlab-run: " << (code == kRunComplete ? "complete: " : "partial: ") << reason
         << "\nspinlab-run: results in " << dir_ << "\n";
    return code;
}

}  // namespace

Tools find_tools() {
    Tools t;
    t.source_dir = SPINLAB_SOURCE_DIR;
    const char* vm = getenv("SPINLAB_VM");
    t.spinlab_vm = vm && *vm ? vm : t.source_dir + "/vm-images/spinlab-vm";
    const char* load = getenv("SPINLAB_LOAD");
    if (load && *load) {
        t.spinlab_load = load;
    } else {
        std::error_code ec;
        fs::path self = fs::read_symlink("/proc/self/exe", ec);
        t.spinlab_load = (self.parent_path() / "spinlab-load").string();
    }
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
