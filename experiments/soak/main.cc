// experiments/soak/main.cc: spinlab-soak, the long run that shows the lab keeps its promises
// while everything around it misbehaves (`make soak`, SOAK_MIN= minutes; `make test` runs one
// minute).
//
// It boots the real kernel with 4 vCPUs under TCG through `spinlab-vm run` (shared region and
// control channel; lockbench in rounds beside kmix, through /bin/par), cycles the host through
// idle, a hog on every host CPU, freezes of vCPU 1 and CFS throttling of every vCPU with
// `spinlab-load`, and once per tick (1 s):
//   - sends a burst of 1-3 hostile channel frames (hostile_frames.h), then half a tick later a valid
//     query, which must be answered within 1 s;
//   - reads the region and checks the per-class invariants where they must hold exactly
//     (invariant_check.h: quiescent records only);
//   - while lockbench is between rounds (lockbench_log.h), compares its own count of every
//     workload class with the kernel's, as read from the region; lockbench --verify compares
//     the same through a system call in the guest, and its verdict is read from the console.
// It ends with one line of figures and exits 1 on any violation, panic or early VM death.
//
// Everything it starts is a Child (experiments/runner/child.h): its own process group with
// PR_SET_PDEATHSIG, so `spinlab-vm run` (QEMU, its state directory and /dev/shm file) and
// `spinlab-load` (hogs, cgroups, thaw) clean up after a normal end, Ctrl-C, SIGTERM, and after
// the soak itself is SIGKILLed. The soak asks for SIGTERM when its own parent dies.
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <spinlab/status.h>
#include <spinlab/sysinfo.h>

#include "channel_client.h"
#include "child.h"
#include "collector/session.h"
#include "hostile_frames.h"
#include "hostlib/error.h"
#include "invariant_check.h"
#include "lockbench_log.h"
#include "signals.h"
#include "vm.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using spinlab::run::Child;

namespace spinlab::soak {
namespace {

struct Options {
    double minutes = 10;
    uint32_t cpus = 4;
    uint64_t seed = 1;
    std::string kernel = "build/kernel/spinlab.elf";
    std::string initrd = "build/kernel/initrd.tar";
    std::string out = "build/soak";
    std::string spinlab_vm, spinlab_load;
};

const char* const kUsage =
    "usage: spinlab-soak [--minutes M] [--cpus N] [--seed S] [--kernel ELF] [--initrd TAR]\n"
    "                    [--out DIR] [--spinlab-vm PATH] [--spinlab-load PATH]\n"
    "Boots the kernel under TCG with lockbench and kmix, cycles the host through idle, hog,\n"
    "freeze and throttle, sends hostile channel frames, and checks the counters every second.\n"
    "Ends with one line of figures; exits 1 on any violation or panic.\n";

std::optional<Options> parse(int argc, char** argv) {
    Options o;
    const fs::path self = fs::canonical("/proc/self/exe").parent_path();  // build/host/bin
    o.spinlab_load = (self / "spinlab-load").string();
    o.spinlab_vm = SPINLAB_SOURCE_DIR "/vm-images/spinlab-vm";
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--help" || a == "-h") {
            std::fputs(kUsage, stdout);
            std::exit(0);
        }
        if (i + 1 >= argc) {
            std::fprintf(stderr, "spinlab-soak: %s needs a value\n%s", a.c_str(), kUsage);
            return std::nullopt;
        }
        std::string v = argv[++i];
        try {
            if (a == "--minutes") o.minutes = std::stod(v);
            else if (a == "--cpus") o.cpus = uint32_t(std::stoul(v));
            else if (a == "--seed") o.seed = std::stoull(v);
            else if (a == "--kernel") o.kernel = v;
            else if (a == "--initrd") o.initrd = v;
            else if (a == "--out") o.out = v;
            else if (a == "--spinlab-vm") o.spinlab_vm = v;
            else if (a == "--spinlab-load") o.spinlab_load = v;
            else {
                std::fprintf(stderr, "spinlab-soak: unknown option %s\n%s", a.c_str(), kUsage);
                return std::nullopt;
            }
        } catch (const std::exception&) {
            std::fprintf(stderr, "spinlab-soak: %s %s: not a number\n", a.c_str(), v.c_str());
            return std::nullopt;
        }
    }
    if (!(o.minutes > 0) || o.cpus < 2) {
        std::fprintf(stderr, "spinlab-soak: --minutes must be above 0 and --cpus at least 2\n");
        return std::nullopt;
    }
    return o;
}

// The host conditions, in the order the soak cycles through them.
enum class Condition { kIdle, kHog, kFreeze, kThrottle, kCount };
const char* condition_name(Condition c) {
    switch (c) {
        case Condition::kIdle: return "idle";
        case Condition::kHog: return "hog";
        case Condition::kFreeze: return "freeze";
        case Condition::kThrottle: return "throttle";
        case Condition::kCount: break;
    }
    return "?";
}

struct Figures {
    double minutes = 0;
    uint64_t frames = 0, answered = 0, checks = 0, lockbench_checks = 0, violations = 0, panics = 0;
    int64_t slowest_ms = 0;  // the slowest answer to a valid query
};

class Soak {
public:
    explicit Soak(Options o) : o_(std::move(o)), frames_(o_.seed) {}
    ~Soak() { stop_all(); }
    int run();

private:
    void start_vm();
    void wait_ready();
    void start_condition(Condition c);
    void stop_condition();
    void stop_all();
    void tick_hostile();
    void tick_query();
    void tick_check();
    void read_console();
    void violation(const std::string& what);
    bool vm_running() { return vm_ && vm_->running(); }

    Options o_;
    HostileFrames frames_;
    Figures f_;
    std::string name_, vm_dir_, log_dir_;
    uint64_t qemu_pid_ = 0;
    std::unique_ptr<Child> vm_, cond_;
    std::unique_ptr<collect::Session> session_;
    std::unique_ptr<collect::ChannelClient> channel_;
    std::unique_ptr<InvariantChecker> checker_;
    LockbenchLog log_;
    std::ifstream console_;
    size_t panics_reported_ = 0, problems_reported_ = 0;
    uint64_t compared_round_ = 0;
    int condition_index_ = 0;
    std::string cond_name_ = "idle";
};

void Soak::violation(const std::string& what) {
    ++f_.violations;
    std::fprintf(stderr, "soak: VIOLATION: %s\n", what.c_str());
}

void Soak::start_vm() {
    name_ = "soak" + std::to_string(getpid());
    vm_dir_ = run::run_dir() + "/vm/" + name_;
    log_dir_ = o_.out;
    fs::create_directories(log_dir_);
    // lockbench in rounds of 2 s with 1.5 s pauses: each pause is a window in which every
    // workload class is quiescent, long enough for at least one 1 s tick to fall inside it.
    // The boot's default lock (tas). With a fair lock (ticket, mcs) every handover waits for one
    // particular vCPU; on a 2-core host at load ~20 the 4-vCPU guest then printed nothing for
    // 40-60 s, and the channel's 1 s bar would measure the host's overload.
    const std::string init =
        "/bin/par /bin/lockbench --verify --rounds 0 --duration-ms 2000 --pause-ms 1500 --locks 4 "
        "--pattern random -- /bin/kmix --duration-ms 0";
    vm_ = std::make_unique<Child>(
        std::vector<std::string>{o_.spinlab_vm, "run", name_, "--quiet", "--cpus", std::to_string(o_.cpus),
                                 "--memory", "256", "--accel", "tcg", "--kernel", o_.kernel, "--initrd",
                                 o_.initrd, "--append", "init=" + init, "--save-console",
                                 log_dir_ + "/console.log"},
        log_dir_ + "/vm.log");
    const auto deadline = Clock::now() + 120s;
    for (;;) {
        if (run::pending_signal()) throw std::runtime_error("interrupted while the VM started");
        if (!vm_->running())
            throw collect::CollectError(collect::kExitNoVm,
                                        "spinlab-vm run " + Child::describe(*vm_->poll()) + " (see " +
                                            log_dir_ + "/vm.log)");
        auto info = run::read_vm_json(vm_dir_ + "/vm.json");
        if (info && info->state == "running" && info->vcpu_tids.size() == o_.cpus) {
            qemu_pid_ = info->qemu_pid;
            break;
        }
        if (Clock::now() > deadline) throw collect::CollectError(collect::kExitNoVm, "the VM did not start in 120 s");
        std::this_thread::sleep_for(100ms);
    }
}

void Soak::wait_ready() {
    collect::Config c;
    c.command = "record";
    c.attach.vm = name_;
    c.source = "region";
    c.timeout_ms = 5000;  // booting under TCG on a loaded host: the 1 s bar starts after this
    const auto deadline = Clock::now() + 180s;
    std::string last = "no answer";
    for (;;) {
        if (run::pending_signal()) throw std::runtime_error("interrupted while the guest booted");
        if (!vm_running()) throw collect::CollectError(collect::kExitNoVm, "the VM ended while booting: " + last);
        try {
            session_ = std::make_unique<collect::Session>(c);
            session_->region();
            session_->configuration();
            std::string warning;
            collect::ClassNames names = session_->class_names(&warning);
            if (!warning.empty()) throw collect::CollectError(collect::kExitNoVm, warning);
            std::vector<bool> workload(kMaxLockClasses);
            for (uint32_t id = 0; id < kMaxLockClasses; ++id) workload[id] = names.name(id).rfind("user", 0) == 0;
            checker_ = std::make_unique<InvariantChecker>(workload, names);
            session_->drop_channel();  // QEMU's socket takes one client: the soak's own, below
            // The bar is 1 s (tick_query); waiting up to 5 s tells a late answer from none.
            channel_ = std::make_unique<collect::ChannelClient>(session_->paths().socket, 5000ms);
            return;
        } catch (const collect::CollectError& e) {
            if (e.exit_code() == collect::kExitAbi) throw;
            last = e.what();
            session_.reset();
        }
        if (Clock::now() > deadline) throw collect::CollectError(collect::kExitNoVm, "the guest was not ready in 180 s: " + last);
        std::this_thread::sleep_for(250ms);
    }
}

void Soak::start_condition(Condition c) {
    stop_condition();
    cond_name_ = condition_name(c);
    if (c == Condition::kIdle) return;
    const std::string stem = std::string(condition_name(c)) + "-" + std::to_string(condition_index_);
    const std::string ready = log_dir_ + "/." + stem + ".ready";
    std::vector<std::string> argv{o_.spinlab_load};
    switch (c) {
        case Condition::kHog:
            argv.push_back("hog");  // one compute-bound process on every host CPU
            break;
        case Condition::kFreeze:
            argv.insert(argv.end(), {"freeze", "--qemu-pid", std::to_string(qemu_pid_), "--vcpus", "1",
                                     "--freeze-ms", "20", "--period-ms", "100", "--out",
                                     log_dir_ + "/" + stem + ".csv"});
            break;
        case Condition::kThrottle:
            argv.insert(argv.end(), {"throttle", "--qemu-pid", std::to_string(qemu_pid_), "--quota-pct", "30"});
            break;
        default:
            break;
    }
    argv.insert(argv.end(), {"--ready-file", ready});
    cond_ = std::make_unique<Child>(argv, log_dir_ + "/" + stem + ".log");
    if (!run::wait_for_file(ready, *cond_, 20s)) {
        std::string why = cond_->running() ? "not in effect after 20 s" : Child::describe(*cond_->poll());
        cond_->stop();
        cond_.reset();
        throw std::runtime_error(std::string("spinlab-load ") + argv[1] + " " + why + " (see " + log_dir_ +
                                 "/" + stem + ".log)");
    }
}

void Soak::stop_condition() {
    if (!cond_) return;
    cond_->stop(10s);
    cond_.reset();
}

void Soak::stop_all() {
    stop_condition();
    channel_.reset();
    session_.reset();
    if (vm_) {
        vm_->stop(20s);
        vm_.reset();
        if (fs::exists(vm_dir_)) {  // `run` did not tear down: stop it from outside as well
            Child stop({o_.spinlab_vm, "stop", name_}, log_dir_ + "/vm.log");
            stop.stop(30s);
        }
    }
}

void Soak::tick_hostile() {
    std::vector<uint8_t> burst;
    const uint32_t n = 1 + uint32_t(frames_.random() % 3);
    for (uint32_t i = 0; i < n; ++i) {
        HostileFrame h = frames_.next();
        burst.insert(burst.end(), h.bytes.begin(), h.bytes.end());
    }
    burst.resize(burst.size() + kFlushBytes, 0);
    channel_->send_raw(burst);
    f_.frames += n;
}

void Soak::tick_query() {
    const auto t0 = Clock::now();
    ++f_.frames;
    try {
        collect::CallResult r = channel_->query(uint32_t(InfoClass::kSpinlabSystemConfiguration), 0, {},
                                                sizeof(SystemConfiguration));
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
        f_.slowest_ms = std::max<int64_t>(f_.slowest_ms, ms);
        if (ms > 250) std::fprintf(stderr, "soak: slow answer: %ld ms in %s\n", long(ms), cond_name_.c_str());
        if (r.status != uint32_t(Status::kSuccess))
            violation(std::string("a valid query was refused: ") + status_name(r.status));
        else if (r.data.size() != sizeof(SystemConfiguration))
            violation("a valid query was answered with " + std::to_string(r.data.size()) + " bytes");
        else if (ms > 1000)
            violation("a valid query was answered after " + std::to_string(ms) + " ms (bar: 1000 ms) in " + cond_name_);
        else
            ++f_.answered;
    } catch (const collect::CollectError& e) {
        violation(std::string("a valid query: ") + e.what());
    }
}

void Soak::read_console() {
    if (!console_.is_open()) console_.open(vm_dir_ + "/console.log", std::ios::binary);
    if (!console_.is_open()) return;
    std::string chunk(64 * 1024, '\0');
    for (;;) {
        console_.read(chunk.data(), std::streamsize(chunk.size()));
        std::streamsize got = console_.gcount();
        if (got <= 0) break;
        log_.feed(std::string_view(chunk.data(), size_t(got)));
    }
    console_.clear();  // at EOF: keep reading as the file grows
    for (; panics_reported_ < log_.panics().size(); ++panics_reported_) {
        ++f_.panics;
        std::fprintf(stderr, "soak: PANIC: %s\n", log_.panics()[panics_reported_].c_str());
    }
    for (; problems_reported_ < log_.problems().size(); ++problems_reported_)
        violation("in the guest: " + log_.problems()[problems_reported_]);
}

void Soak::tick_check() {
    read_console();
    const bool before = log_.between_rounds();
    const uint64_t round = log_.rounds_ended();
    collect::Snapshot s = session_->region().snapshot();
    read_console();
    // Quiescent only if lockbench was between the same two rounds before and after the reading.
    const bool quiet = before && log_.between_rounds() && log_.rounds_ended() == round;
    CheckResult r = checker_->add(s, quiet);
    f_.checks += r.checks;
    for (const std::string& v : r.violations) violation(v);
    if (quiet && round != compared_round_ && !log_.counts().empty()) {
        compared_round_ = round;
        for (const auto& [cls, mine] : log_.counts()) {
            const uint64_t kernel = collect::merge_cpus(s, cls).acquisitions;
            ++f_.lockbench_checks;
            if (kernel != mine)
                violation("round " + std::to_string(round) + ", class id " + std::to_string(cls) +
                          ": lockbench counted " + std::to_string(mine) + " acquisitions, the region says " +
                          std::to_string(kernel));
        }
    }
}

int Soak::run() {
    run::install_signal_handlers();    // SIGINT, SIGTERM, SIGHUP end the soak in order
    prctl(PR_SET_PDEATHSIG, SIGTERM);  // and so does the death of our parent
    if (getppid() == 1) std::raise(SIGTERM);

    std::string fatal;
    const double total_s = o_.minutes * 60;
    // Each condition holds for an eighth of the soak, between 5 s and 60 s, so even a short
    // soak visits all four.
    const double phase_s = std::clamp(total_s / 8, 5.0, 60.0);
    Clock::time_point start{};
    try {
        start_vm();
        wait_ready();
        std::printf("soak: VM %s up (%u vCPUs, TCG); %.1f minutes, conditions idle/hog/freeze/throttle, %.0f s each\n",
                    name_.c_str(), o_.cpus, o_.minutes, phase_s);
        std::fflush(stdout);
        start = Clock::now();
        const auto end = start + std::chrono::milliseconds(int64_t(total_s * 1000));
        int current = -1;
        for (auto tick = start; Clock::now() < end && !run::pending_signal();
             tick = std::max(tick + 1s, Clock::now())) {  // a slow tick delays, never bunches, the next
            const int phase = int(std::chrono::duration<double>(tick - start).count() / phase_s);
            if (phase != current) {
                current = phase;
                condition_index_ = phase;
                Condition c = Condition(phase % int(Condition::kCount));
                start_condition(c);
                std::printf("soak: %5.0f s  %-8s frames %lu, answered %lu, checks %lu, lockbench %lu, violations %lu\n",
                            std::chrono::duration<double>(tick - start).count(), condition_name(c), f_.frames,
                            f_.answered, f_.checks, f_.lockbench_checks, f_.violations);
                std::fflush(stdout);
            }
            if (!vm_running()) break;
            if (cond_ && !cond_->running()) throw std::runtime_error("spinlab-load ended early: " + Child::describe(*cond_->poll()));
            tick_hostile();
            std::this_thread::sleep_until(tick + 500ms);
            tick_query();
            tick_check();
            std::this_thread::sleep_until(tick + 1s);
        }
        if (!vm_running() && !run::pending_signal()) fatal = "the VM ended early: spinlab-vm run " + Child::describe(*vm_->poll());
    } catch (const std::exception& e) {
        fatal = e.what();
    }
    if (start != Clock::time_point{}) f_.minutes = std::chrono::duration<double>(Clock::now() - start).count() / 60;
    read_console();
    stop_all();
    if (run::pending_signal()) fatal = "interrupted by " + run::signal_name(run::pending_signal());
    if (fatal.empty() && f_.lockbench_checks == 0) fatal = "no quiescent lockbench window was seen: nothing compared";
    if (!fatal.empty()) std::fprintf(stderr, "soak: %s\n", fatal.c_str());
    std::printf("soak: %.1f minutes, %lu frames sent, %lu queries answered, %lu invariant checks, "
                "%lu lockbench checks (%lu in-guest verdicts agree), slowest answer %ld ms, %lu violations, "
                "%lu panics%s\n",
                f_.minutes, f_.frames, f_.answered, f_.checks, f_.lockbench_checks, log_.agreements(), f_.slowest_ms,
                f_.violations, f_.panics, fatal.empty() ? "" : " (incomplete)");
    return fatal.empty() && f_.violations == 0 && f_.panics == 0 ? 0 : 1;
}

}  // namespace
}  // namespace spinlab::soak

int main(int argc, char** argv) {
    auto o = spinlab::soak::parse(argc, argv);
    if (!o) return 2;
    spinlab::soak::Soak soak(*o);
    return soak.run();
}
