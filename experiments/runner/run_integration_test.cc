// experiments/runner/run_integration_test.cc: the real spinlab-run binary end to end.
//
// FakeGuest*: against the collector's fake guest (real channel server, real region, host
//   threads hammering instrumented locks) posing as an attached VM, and spinlab-fake-vcpus as
//   its vCPU threads: conditions, reset, snapshots, results, the report, SIGINT. No QEMU.
// RealVm*: a real VM under TCG with lockbench (needs `make kernel` with lockbench in the
//   initrd; skip otherwise, saying so): a short experiment, and SIGKILL of the runner leaving
//   no QEMU, spinlab-load, cgroup, /dev/shm file or VM state directory behind; a neighbours-1
//   phase (every VM's counters in the results), and SIGTERM then SIGKILL of the runner during
//   one, leaving no neighbour behind either.
#include <gtest/gtest.h>

#include <chrono>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "fake_guest.h"

namespace fs = std::filesystem;
namespace pt = boost::property_tree;

namespace {

std::string tmp_dir(const std::string& tag) {
    std::string d = testing::TempDir() + "spinlab_run_it_" + tag + "_" + std::to_string(getpid());
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
}

std::string read_text(const std::string& path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// Runs spinlab-run with `args` and the environment; returns its exit status; output in `log`.
pid_t spawn_runner(const std::vector<std::string>& args, const std::string& run_dir,
                   const std::string& log) {
    pid_t pid = fork();
    if (pid == 0) {
        setenv("SPINLAB_RUN_DIR", run_dir.c_str(), 1);
        setenv("SPINLAB_LOAD", SPINLAB_LOAD_BIN, 1);
        int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 1);
        dup2(fd, 2);
        std::vector<char*> argv{const_cast<char*>(SPINLAB_RUN_BIN)};
        for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        execv(SPINLAB_RUN_BIN, argv.data());
        _exit(127);
    }
    return pid;
}

int run_runner(const std::vector<std::string>& args, const std::string& run_dir,
               const std::string& log) {
    int st = 0;
    waitpid(spawn_runner(args, run_dir, log), &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int run_report(const std::string& dir) {
    std::string cmd = std::string(SPINLAB_SOURCE_DIR) + "/analysis/spinlab-report " + dir + " > " +
                      dir + "/report.out 2>&1";
    int rc = std::system(cmd.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

pt::ptree json(const std::string& path) {
    pt::ptree t;
    pt::read_json(path, t);
    return t;
}

// A guest the runner attaches to as VM "fake": the fake guest's socket and region in the VM
// directory, spinlab-fake-vcpus' threads as its vCPU threads.
class FakeVm {
public:
    explicit FakeVm(const std::string& run_dir, uint32_t deaf_connections = 0) {
        dir_ = run_dir + "/vm/fake";
        fs::create_directories(dir_);
        spinlab::testing::FakeGuestOptions o;
        o.socket_path = dir_ + "/control.sock";
        o.shm_path = dir_ + "/shm";
        o.cpus = 2;
        o.locks = 2;
        o.deaf_connections = deaf_connections;
        guest_ = std::make_unique<spinlab::testing::FakeGuest>(o);
        // spinlab-fake-vcpus exits when its stdin closes: give it a pipe we hold open.
        int in[2], out[2];
        if (pipe(in) != 0 || pipe(out) != 0) throw std::runtime_error("pipe");
        pid_t child = fork();
        if (child == 0) {
            dup2(in[0], 0);
            dup2(out[1], 1);
            close(in[1]);
            close(out[0]);
            execl(SPINLAB_FAKE_VCPUS_BIN, SPINLAB_FAKE_VCPUS_BIN, "2", "300", "--idle", nullptr);
            _exit(127);
        }
        close(in[0]);
        close(out[1]);
        stdin_fd_ = in[1];
        vcpus_ = fdopen(out[0], "r");
        long pid = 0, t0 = 0, t1 = 0;
        if (!vcpus_ || fscanf(vcpus_, "%ld %ld %ld", &pid, &t0, &t1) != 3)
            throw std::runtime_error("spinlab-fake-vcpus did not start");
        vcpus_pid_ = pid_t(pid);
        std::ofstream(dir_ + "/vm.json")
            << "{\"name\": \"fake\", \"state\": \"running\", \"accel\": \"tcg\", \"backend\": "
               "\"qemu\", \"qemu_version\": \"fake\", \"qemu_pid\": "
            << pid << ", \"vcpu_thread_ids\": [" << t0 << ", " << t1 << "]}\n";
    }
    ~FakeVm() {
        guest_.reset();
        if (stdin_fd_ >= 0) close(stdin_fd_);
        if (vcpus_pid_ > 0) {
            kill(vcpus_pid_, SIGKILL);
            waitpid(vcpus_pid_, nullptr, 0);
        }
        if (vcpus_) fclose(vcpus_);
        fs::remove_all(dir_);
    }

private:
    std::string dir_;
    std::unique_ptr<spinlab::testing::FakeGuest> guest_;
    FILE* vcpus_ = nullptr;
    pid_t vcpus_pid_ = -1;
    int stdin_fd_ = -1;
};

std::vector<std::string> fake_args(const std::string& out, const std::string& phases, int reps,
                                   const std::string& duration) {
    return {"--vm.attach", "fake", "--run.phases", phases, "--run.repetitions",
            std::to_string(reps), "--run.duration", duration, "--run.warmup", "0.3",
            "--run.timeline", geteuid() == 0 ? "on" : "off", "--workload.throughput-classes",
            "bench", "--output.dir", out, "--output.run-id", "t",
            // The fake guest has no trace sessions (its sysinfo refuses the sub-class).
            "--trace.enable", "none"};
}

TEST(FakeGuest, EndToEndResultsAndReport) {
    std::string d = tmp_dir("e2e");
    FakeVm vm(d + "/run");
    std::string log = d + "/runner.log";
    int rc = run_runner(fake_args(d + "/results", "idle-host,host-load", 2, "1"), d + "/run", log);
    ASSERT_EQ(rc, 0) << read_text(log);
    std::string dir = d + "/results/t";
    EXPECT_EQ(fs::read_symlink(d + "/results/latest").string(), "t");
    pt::ptree status = json(dir + "/status.json");
    EXPECT_EQ(status.get<std::string>("state"), "complete") << status.get<std::string>("reason");
    EXPECT_EQ(status.get_child("done").size(), 4u);
    pt::ptree meta = json(dir + "/meta.json");
    EXPECT_EQ(meta.get<std::string>("accelerator"), "tcg");
    EXPECT_EQ(meta.get_child("plan").size(), 4u);
    EXPECT_EQ(meta.get<std::string>("order"), "abba");
    for (const char* phase : {"idle-host", "host-load"})
        for (int rep = 1; rep <= 2; ++rep) {
            std::string f = dir + "/snapshots/" + phase + "-r" + std::to_string(rep) + ".json";
            ASSERT_TRUE(fs::exists(f)) << f;
            pt::ptree s = json(f);
            EXPECT_GT(s.get<uint64_t>("workload.lockbench.ops"), 0u) << f;
            // The window covers at least the planned second (the runner waits until baseline +
            // duration before it reads the end); how much more depends on when the host lets the
            // runner read again, so above, only a window left open far too long fails.
            EXPECT_GE(s.get<double>("duration_s"), 1.0) << f;
            EXPECT_LT(s.get<double>("duration_s"), 6.0) << f;
        }
    EXPECT_TRUE(fs::exists(dir + "/spec.ini"));
    EXPECT_TRUE(fs::exists(dir + "/clock.json"));
    if (geteuid() == 0) {
        std::string tl = read_text(dir + "/timeline.csv");
        EXPECT_NE(tl.find(",on,"), std::string::npos) << "no on intervals in timeline.csv";
        EXPECT_NE(tl.find(",host-load,2"), std::string::npos);
    }
    EXPECT_EQ(run_report(dir), 0) << read_text(dir + "/report.out");
    EXPECT_TRUE(fs::exists(dir + "/summary.json"));
    // The runner printed the results directory on stdout.
    EXPECT_NE(read_text(log).find(dir), std::string::npos);
    fs::remove_all(d);
}

// A request sent before the guest's channel handler runs is never answered (a booting QEMU guest
// drops it). The runner probes with a short timeout, so a long [vm] channel-timeout (120 s, as
// the oversubscribed sweeps set) does not turn one lost request into "not ready within 60 s".
TEST(FakeGuest, AnUnansweredFirstRequestIsProbedAgainNotWaitedOut) {
    std::string d = tmp_dir("deaf");
    FakeVm vm(d + "/run", 1);
    std::string log = d + "/runner.log";
    std::vector<std::string> args = fake_args(d + "/results", "idle-host", 1, "0.5");
    for (const char* a : {"--vm.channel-timeout", "120", "--vm.boot-timeout", "30"}) args.push_back(a);
    auto t0 = std::chrono::steady_clock::now();
    int rc = run_runner(args, d + "/run", log);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_EQ(rc, 0) << read_text(log);
    EXPECT_EQ(json(d + "/results/t/status.json").get<std::string>("state"), "complete");
    // one lost probe (5 s) and the run (~1 s) take about 7 s here; the old wait was the whole
    // boot timeout, 30 s, then a failure
    EXPECT_LT(s, 25.0) << read_text(log);
    fs::remove_all(d);
}

TEST(FakeGuest, SigintKeepsWhatWasGatheredAsPartial) {
    std::string d = tmp_dir("int");
    FakeVm vm(d + "/run");
    std::string log = d + "/runner.log";
    pid_t pid = spawn_runner(fake_args(d + "/results", "idle-host,host-load", 3, "1.5"), d + "/run", log);
    std::string first = d + "/results/t/snapshots/idle-host-r1.json";
    for (int i = 0; i < 300 && !fs::exists(first); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_TRUE(fs::exists(first)) << read_text(log);
    kill(pid, SIGINT);
    int st = 0;
    waitpid(pid, &st, 0);
    ASSERT_TRUE(WIFEXITED(st)) << read_text(log);
    EXPECT_EQ(WEXITSTATUS(st), 1) << read_text(log);
    pt::ptree status = json(d + "/results/t/status.json");
    EXPECT_EQ(status.get<std::string>("state"), "partial");
    EXPECT_EQ(status.get<std::string>("reason").rfind("interrupted by SIGINT", 0), 0u)
        << status.get<std::string>("reason");
    EXPECT_GE(status.get_child("done").size(), 1u);
    EXPECT_LT(status.get_child("done").size(), 6u);
    EXPECT_EQ(run_report(d + "/results/t"), 0) << read_text(d + "/results/t/report.out");
    fs::remove_all(d);
}

TEST(FakeGuest, BadSpecIsUsageError) {
    std::string d = tmp_dir("bad");
    int rc = run_runner({"--run.phases", "idle-host", "--vm.cpus", "0"}, d, d + "/log");
    EXPECT_EQ(rc, 2);
    EXPECT_NE(read_text(d + "/log").find("--vm.cpus = '0': must be a whole number from 1 to 64"),
              std::string::npos);
    fs::remove_all(d);
}

// ---- a run directory this user may not use ----------------------------------------------------

// spinlab-run as uid 65534 in `cwd`, with only `env` (and PATH): its exit status; output in `log`.
int run_runner_as_nobody(const std::vector<std::string>& args, const std::vector<std::string>& env,
                         const std::string& cwd, const std::string& log) {
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 1);
        dup2(fd, 2);
        if (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0 ||
            chdir(cwd.c_str()) != 0)
            _exit(126);
        clearenv();
        setenv("PATH", "/usr/bin:/bin", 1);
        for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
        std::vector<char*> argv{const_cast<char*>(SPINLAB_RUN_BIN)};
        for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        execv(SPINLAB_RUN_BIN, argv.data());
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// The case: a user whose run directory cannot be made (or is another user's) is refused
// in one sentence before the results directory exists or a VM starts, not partway through.
TEST(RunDir, RefusedBeforeTheResultsDirectory) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (runs spinlab-run as uid 65534)";
    std::string d = tmp_dir("rundir");
    fs::permissions(d, fs::perms::all);  // 65534 reaches what is below
    const std::string out = d + "/out", ro = d + "/ro", shared = d + "/shared";
    fs::create_directories(out);
    fs::create_directories(ro);  // root's, 0755
    fs::create_directories(shared + "/spinlab-65534");  // planted by root in a shared TMPDIR
    fs::permissions(out, fs::perms::all);
    fs::permissions(shared, fs::perms::all | fs::perms::sticky_bit);
    const std::vector<std::string> args{"--spec", std::string(SPINLAB_SOURCE_DIR) + "/experiments/default.ini",
                                        "--run.repetitions", "1", "--run.duration", "2", "--output.dir",
                                        out + "/results"};
    const std::string hint =
        "set SPINLAB_RUN_DIR (or XDG_RUNTIME_DIR, for a user other than root) to a directory you may write";
    const passwd* pw = getpwuid(65534);
    const std::string nobody = pw ? pw->pw_name : "uid 65534";
    const std::string nobody_id = pw ? nobody + " (uid 65534)" : nobody;

    // SPINLAB_RUN_DIR under a directory of root's.
    EXPECT_EQ(run_runner_as_nobody(args, {"SPINLAB_RUN_DIR=" + ro + "/run"}, out, d + "/log1"), 2);
    EXPECT_EQ(read_text(d + "/log1"), "spinlab-run: user " + nobody + " may not create the run directory " + ro +
                                          "/run (" + ro + ": Permission denied): " + hint + "\n");
    // No SPINLAB_RUN_DIR nor XDG_RUNTIME_DIR: the per-user directory under TMPDIR, planted.
    if (!fs::exists("/run/user/65534")) {
        EXPECT_EQ(run_runner_as_nobody(args, {"TMPDIR=" + shared}, out, d + "/log2"), 2);
        EXPECT_EQ(read_text(d + "/log2"), "spinlab-run: refusing the run directory " + shared +
                                              "/spinlab-65534: it is owned by root (uid 0), not by you, " + nobody_id +
                                              ", and a run directory someone else controls is never used; remove "
                                              "it or " + hint + "\n");
    }
    EXPECT_FALSE(fs::exists(out + "/results")) << "the results directory was made before the refusal";
    EXPECT_TRUE(fs::is_empty(ro));
    fs::remove_all(d);
}

// ---- a real VM ------------------------------------------------------------------------------

// The kernel and initrd: $SPINLAB_KERNEL_DIR, else build/kernel (make kernel).
std::string kernel_dir() {
    const char* e = getenv("SPINLAB_KERNEL_DIR");
    return e && *e ? e : std::string(SPINLAB_SOURCE_DIR) + "/build/kernel";
}

std::string real_vm_skip_reason() {
    if (!fs::exists(kernel_dir() + "/spinlab.elf")) return "no kernel in " + kernel_dir() + ": run make kernel";
    if (read_text(kernel_dir() + "/initrd.tar").find("bin/lockbench") == std::string::npos)
        return "the initrd in " + kernel_dir() + " has no /bin/lockbench yet (make kernel)";
    if (geteuid() != 0) return "needs root (cgroups, tracefs)";
    return "";
}

std::vector<std::string> real_args(const std::string& out, const std::string& name,
                                   const std::string& phases, const std::string& reps) {
    // kmix off: lockbench does not run kmix beside it yet (see init_line() in spec.cc).
    return {"--spec", std::string(SPINLAB_SOURCE_DIR) + "/experiments/default.ini",
            "--vm.name", name, "--vm.accel", "tcg", "--vm.kernel", kernel_dir() + "/spinlab.elf",
            "--vm.initrd", kernel_dir() + "/initrd.tar", "--workload.kmix", "off",
            "--run.phases", phases, "--run.repetitions", reps, "--run.duration", "3",
            "--run.warmup", "1", "--output.dir", out, "--output.run-id", "t"};
}

TEST(RealVm, ShortExperimentUnderTcg) {
    std::string why = real_vm_skip_reason();
    if (!why.empty()) GTEST_SKIP() << why;
    std::string d = tmp_dir("vm");
    std::string log = d + "/runner.log";
    int rc = run_runner(real_args(d + "/results", "it" + std::to_string(getpid()),
                                  "idle-host,host-load", "1"),
                        d + "/run", log);
    std::string dir = d + "/results/t";
    ASSERT_EQ(rc, 0) << read_text(log) << read_text(dir + "/logs/vm.log");
    EXPECT_EQ(json(dir + "/status.json").get<std::string>("state"), "complete");
    pt::ptree s = json(dir + "/snapshots/host-load-r1.json");
    EXPECT_GT(s.get<uint64_t>("workload.lockbench.ops"), 0u);
    // default.ini's trace: the long waits come from it, with its exact loss counters, and its
    // file is beside the snapshot.
    EXPECT_EQ(s.get<std::string>("trace.file"), "snapshots/host-load-r1.trace");
    EXPECT_TRUE(fs::exists(dir + "/snapshots/host-load-r1.trace"));
    EXPECT_EQ(s.get<std::string>("trace.enable_flags"), "long-wait");
    EXPECT_TRUE(s.get<bool>("trace.counters_found"));
    EXPECT_EQ(s.get_child("trace.cpus").size(), 2u);
    EXPECT_EQ(s.get<uint64_t>("trace.loss.events_written") + s.get<uint64_t>("trace.loss.events_lost"),
              s.get<uint64_t>("trace.loss.events_attempted"));
    // Nothing lost at this rate; every event written is in the file: the long waits and the
    // one system configuration event of the stop. So no long wait is missing from the list
    // (long_waits_dropped is built from the session's EventsLost; trace_results_test checks it
    // on a trace that lost events).
    EXPECT_EQ(s.get<uint64_t>("trace.loss.events_lost"), 0u);
    EXPECT_EQ(s.get<uint64_t>("long_waits_dropped"), 0u);
    EXPECT_EQ(s.get<uint64_t>("trace.events"), s.get<uint64_t>("trace.loss.events_written"));
    EXPECT_EQ(s.get_child("long_waits").size() + 1, s.get<uint64_t>("trace.loss.events_written"));
    // Every long wait the histograms count (buckets >= 2^20 = long-wait=) is listed, lockbench's
    // ring-3 ones (through their rings) and the kernel's. The session brackets the counters'
    // window, so the list may hold a few more, never fewer.
    std::map<std::string, uint64_t> counted, listed;
    for (const auto& [k, cpu] : s.get_child("cpus"))
        for (const auto& [name, cls] : cpu.get_child("classes"))
            for (const auto& [bucket, n] : cls.get_child("wait_hist"))
                if (std::stoi(bucket) >= 20) counted[name] += n.get_value<uint64_t>();
    for (const auto& [k, w] : s.get_child("long_waits")) {
        listed[w.get<std::string>("lock_class")]++;
        EXPECT_NE(w.get<std::string>("holder_end_cpu"), "null");
    }
    for (const auto& [name, n] : counted) EXPECT_GE(listed[name], n) << name;
    EXPECT_EQ(json(dir + "/meta.json").get<std::string>("trace.logger_mode"), "real-time");
    std::string tl = read_text(dir + "/timeline.csv");
    // spinlab-load timeline's own format: the contract's columns first, each repetition's rows once.
    EXPECT_EQ(tl.rfind("vcpu,tid,state,start_host_tsc,end_host_tsc,phase,rep,", 0), 0u);
    EXPECT_NE(tl.find(",on,"), std::string::npos);
    EXPECT_NE(tl.find(",idle-host,1,"), std::string::npos);
    EXPECT_NE(tl.find(",host-load,1,"), std::string::npos);
    EXPECT_EQ(tl.find("vcpu,tid", 1), std::string::npos) << "one header";
    EXPECT_EQ(run_report(dir), 0) << read_text(dir + "/report.out");
    EXPECT_FALSE(fs::exists(d + "/run/vm/it" + std::to_string(getpid()))) << "VM state left";
    fs::remove_all(d);
}

std::set<std::string> spinlab_cgroups() {
    std::set<std::string> out;
    std::error_code ec;
    for (const char* root : {"/sys/fs/cgroup"}) {
        for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
             it != fs::recursive_directory_iterator(); it.increment(ec)) {
            if (ec) break;
            if (it->is_directory(ec) && it->path().filename().string().rfind("spinlab-", 0) == 0)
                out.insert(it->path().string());
            if (it.depth() > 3) it.disable_recursion_pending();
        }
    }
    return out;
}

// Processes whose command line contains `needle`.
std::vector<std::string> processes_with(const std::string& needle) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator("/proc")) {
        std::string name = e.path().filename();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::string cmd = read_text(e.path().string() + "/cmdline");
        for (char& c : cmd)
            if (c == '\0') c = ' ';
        if (cmd.find(needle) != std::string::npos && cmd.find("gtest") == std::string::npos)
            out.push_back(name + ": " + cmd);
    }
    return out;
}

TEST(RealVm, SigkillOfTheRunnerLeavesNothing) {
    std::string why = real_vm_skip_reason();
    if (!why.empty()) GTEST_SKIP() << why;
    std::string d = tmp_dir("kill");
    const std::string name = "kill" + std::to_string(getpid());
    std::set<std::string> cgroups_before = spinlab_cgroups();
    pid_t pid = spawn_runner(real_args(d + "/results", name, "host-load", "2"), d + "/run",
                             d + "/runner.log");
    // Wait until the VM runs and the hogs are in effect (the condition's log exists and the
    // counters were reset: measuring), then kill the runner outright.
    std::string hog_log = d + "/results/t/logs/host-load-r1.log";
    for (int i = 0; i < 1200 && !fs::exists(hog_log); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_TRUE(fs::exists(hog_log)) << read_text(d + "/runner.log");
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    ASSERT_FALSE(processes_with(d + "/results/t/logs/").empty()) << "no spinlab-load running";
    kill(pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    std::vector<std::string> left;
    for (int i = 0; i < 300; ++i) {  // up to 30 s: QEMU teardown and the hogs' cleanup
        left.clear();
        for (auto& p : processes_with("spinlab-" + name)) left.push_back("process " + p);
        for (auto& p : processes_with("-name " + name)) left.push_back("process " + p);
        for (auto& p : processes_with(d + "/results/t/logs/")) left.push_back("process " + p);
        if (fs::exists("/dev/shm/spinlab-" + name)) left.push_back("/dev/shm/spinlab-" + name);
        if (fs::exists(d + "/run/vm/" + name)) left.push_back(d + "/run/vm/" + name);
        for (const auto& c : spinlab_cgroups())
            if (!cgroups_before.count(c)) left.push_back("cgroup " + c);
        if (left.empty()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::string all;
    for (auto& l : left) all += l + "\n";
    EXPECT_TRUE(left.empty()) << "left behind after SIGKILL of spinlab-run:\n" << all;
    fs::remove_all(d);
}

std::vector<std::string> real_neighbour_args(const std::string& out, const std::string& name, const std::string& reps) {
    std::vector<std::string> a = real_args(out, name, "neighbours-1", reps);
    a.insert(a.end(), {"--neighbours.host-cpus", "0,1", "--vm.cpus", "2", "--neighbours.cpus", "2"});
    return a;
}

// tracefs instances named after spinlab.
std::set<std::string> spinlab_trace_instances() {
    std::set<std::string> out;
    std::error_code ec;
    for (const char* root : {"/sys/kernel/tracing/instances", "/sys/kernel/debug/tracing/instances"})
        for (const auto& e : fs::directory_iterator(root, ec))
            if (e.path().filename().string().find("spinlab") != std::string::npos) out.insert(e.path().string());
    return out;
}

// What a run of VM `name` (and its neighbours `name`-n<k>) left: processes, /dev/shm files,
// state directories, sockets, cgroups and tracefs instances not there `before`.
std::vector<std::string> left_behind(const std::string& name, const std::string& d,
                                     const std::set<std::string>& cgroups_before,
                                     const std::set<std::string>& instances_before) {
    std::vector<std::string> left;
    for (auto& p : processes_with("spinlab-" + name)) left.push_back("process " + p);
    for (auto& p : processes_with("-name " + name)) left.push_back("process " + p);
    for (auto& p : processes_with(" " + name + "-n")) left.push_back("process " + p);
    for (auto& p : processes_with(d + "/results/t/logs/")) left.push_back("process " + p);
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/dev/shm", ec))
        if (e.path().filename().string().find(name) != std::string::npos) left.push_back(e.path().string());
    for (const auto& e : fs::directory_iterator(d + "/run/vm", ec)) left.push_back("state " + e.path().string());
    for (const auto& c : spinlab_cgroups())
        if (!cgroups_before.count(c)) left.push_back("cgroup " + c);
    for (const auto& t : spinlab_trace_instances())
        if (!instances_before.count(t)) left.push_back("tracefs instance " + t);
    return left;
}

// CPU seconds (user + system) QEMU `pid`'s threads `tids` have used so far; -1 when one is gone.
double thread_cpu_seconds(uint64_t pid, const std::vector<uint64_t>& tids) {
    long ticks = 0;
    for (uint64_t tid : tids) {
        std::string stat = read_text("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/stat");
        const size_t paren = stat.rfind(')');
        if (paren == std::string::npos) return -1;
        std::istringstream in(stat.substr(paren + 2));
        std::string field;
        for (int i = 3; i <= 15 && in >> field; ++i)
            if (i == 14 || i == 15) ticks += std::stol(field);  // utime, stime
    }
    return double(ticks) / double(sysconf(_SC_CLK_TCK));
}

// A neighbours-1 phase beside an idle-host phase, 2 repetitions each (order abba: neighbours-1
// r1, idle-host r1 and r2, neighbours-1 r2): the neighbour is booted once, beside the measured
// VM, paused while the idle-host repetitions run (its vCPU threads take no CPU), resumed for
// each neighbours-1 repetition, and both VMs' counters are kept for each of those.
TEST(RealVm, NeighboursPhaseUnderTcgHasEveryVmsCounters) {
    std::string why = real_vm_skip_reason();
    if (!why.empty()) GTEST_SKIP() << why;
    std::string d = tmp_dir("nb");
    const std::string name = "nb" + std::to_string(getpid());
    std::vector<std::string> args = real_neighbour_args(d + "/results", name, "2");
    for (size_t i = 0; i + 1 < args.size(); ++i) {
        if (args[i] == "--run.duration") args[i + 1] = "2";
        if (args[i] == "--run.warmup") args[i + 1] = "0.5";
        if (args[i] == "--run.phases") args[i + 1] = "neighbours-1,idle-host";
    }
    const std::string dir = d + "/results/t";
    pid_t pid = spawn_runner(args, d + "/run", d + "/runner.log");
    // While idle-host r1 runs, the paused neighbour's vCPU threads use no CPU (one clock tick of
    // slack); while neighbours-1 runs they do (a busy lockbench guest).
    auto cpu_over_a_second = [&]() {
        pt::ptree vm;
        try {
            vm = json(d + "/run/vm/" + name + "-n1/vm.json");
        } catch (const std::exception&) {
            return -1.0;
        }
        std::vector<uint64_t> tids;
        for (const auto& t : vm.get_child("vcpu_thread_ids")) tids.push_back(t.second.get_value<uint64_t>());
        const uint64_t qemu = vm.get<uint64_t>("qemu_pid");
        const double before = thread_cpu_seconds(qemu, tids);
        std::this_thread::sleep_for(std::chrono::seconds(1));
        const double after = thread_cpu_seconds(qemu, tids);
        return before < 0 || after < 0 ? -1.0 : after - before;
    };
    auto status_says = [&](const std::string& what) {
        return read_text(dir + "/status.json").find(what) != std::string::npos;
    };
    double running = -1, paused = -1;
    for (int i = 0; i < 3000 && !status_says("now idle-host r1"); ++i) {
        if (running < 0 && status_says("now neighbours-1 r1")) running = cpu_over_a_second();
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (status_says("now idle-host r1")) paused = cpu_over_a_second();
    int st = 0;
    waitpid(pid, &st, 0);
    ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << read_text(d + "/runner.log") << read_text(dir + "/logs/n1.vm.log");
    EXPECT_EQ(json(dir + "/status.json").get<std::string>("state"), "complete");
    EXPECT_GE(paused, 0) << "the neighbour's vCPU threads were not found during idle-host r1";
    EXPECT_LE(paused, 1.0 / double(sysconf(_SC_CLK_TCK))) << "the paused neighbour used CPU during idle-host r1";
    std::cout << "neighbour's vCPU threads, CPU seconds over 1 s: in neighbours-1 r1 " << running << " (-1: not sampled), paused "
              << paused << "\n";
    // Booted once, beside the measured VM: one neighbour log, one boot in it, a pause after the
    // boot and after each neighbours-1 repetition, a resume before each.
    const std::string vm_log = read_text(dir + "/logs/n1.vm.log");
    auto count = [&](const std::string& text, const std::string& what) {
        size_t n = 0;
        for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
        return n;
    };
    EXPECT_EQ(count(vm_log, "vCPU threads ["), 1u) << vm_log;
    EXPECT_EQ(count(vm_log, name + "-n1: paused"), 3u) << vm_log;
    EXPECT_EQ(count(vm_log, name + "-n1: running"), 2u) << vm_log;
    EXPECT_FALSE(fs::exists(dir + "/logs/neighbours-1-r1-n1.vm.log"));
    // Both VMs' lock counters over their windows, each repetition: the measured VM's snapshot
    // and the neighbour's file beside it, each with its own throughput and per-CPU counters.
    for (const char* rep : {"r1", "r2"}) {
        pt::ptree m = json(dir + "/snapshots/neighbours-1-" + rep + ".json");
        pt::ptree n = json(dir + "/snapshots/neighbours/neighbours-1-" + rep + "-n1.json");
        EXPECT_GT(m.get<uint64_t>("workload.lockbench.ops"), 0u) << rep;
        EXPECT_GT(n.get<uint64_t>("workload.lockbench.ops"), 0u) << rep;
        EXPECT_EQ(n.get<std::string>("phase"), "neighbours-1");
        EXPECT_EQ(n.get_child("cpus").size(), 2u);
    }
    EXPECT_FALSE(fs::exists(dir + "/snapshots/neighbours/neighbours-1-r1-n2.json"));
    EXPECT_FALSE(fs::exists(dir + "/snapshots/neighbours/idle-host-r1-n1.json"));
    // meta.json: both VMs pinned to host CPUs 0 and 1, 4 vCPUs over 2 host CPUs.
    pt::ptree meta = json(dir + "/meta.json");
    EXPECT_EQ(meta.get_child("neighbours.vms").size(), 2u);
    EXPECT_EQ(meta.get<double>("neighbours.overcommit.neighbours-1"), 2.0);
    EXPECT_EQ(meta.get_child("neighbours.vms").back().second.get<std::string>("name"), name + "-n1");
    EXPECT_EQ(meta.get<std::string>("pinning"), "vCPU i on host CPU 0,1[i]");
    EXPECT_EQ(run_report(dir), 0) << read_text(dir + "/report.out");
    EXPECT_NE(read_text(dir + "/report.md").find("| neighbours-1 | " + name + "-n1 |"), std::string::npos)
        << "the report shows the neighbour's throughput";
    EXPECT_TRUE(left_behind(name, d, spinlab_cgroups(), spinlab_trace_instances()).empty());
    fs::remove_all(d);
}

// SIGTERM, then (a second run) SIGKILL of spinlab-run while a neighbour VM runs: nothing of
// either VM is left.
TEST(RealVm, SigtermAndSigkillDuringNeighboursLeaveNothing) {
    std::string why = real_vm_skip_reason();
    if (!why.empty()) GTEST_SKIP() << why;
    for (int sig : {SIGTERM, SIGKILL}) {
        std::string d = tmp_dir(std::string("nbkill") + std::to_string(sig));
        const std::string name = "nk" + std::to_string(sig) + "x" + std::to_string(getpid());
        const std::set<std::string> cgroups_before = spinlab_cgroups(), instances_before = spinlab_trace_instances();
        pid_t pid = spawn_runner(real_neighbour_args(d + "/results", name, "2"), d + "/run", d + "/runner.log");
        // Until the neighbour's guest runs (its state says running), then into the warm-up.
        const std::string state = d + "/run/vm/" + name + "-n1/vm.json";
        for (int i = 0; i < 1200 && read_text(state).find("\"running\"") == std::string::npos; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        ASSERT_NE(read_text(state).find("\"running\""), std::string::npos) << read_text(d + "/runner.log");
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        ASSERT_FALSE(processes_with("-name " + name + "-n1").empty()) << "no neighbour QEMU running";
        kill(pid, sig);
        int st;
        waitpid(pid, &st, 0);
        if (sig == SIGTERM) {
            EXPECT_TRUE(WIFEXITED(st)) << "spinlab-run ends by itself on SIGTERM";
        }
        std::vector<std::string> left;
        for (int i = 0; i < 300; ++i) {  // up to 30 s: QEMU teardown
            left = left_behind(name, d, cgroups_before, instances_before);
            if (left.empty()) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        std::string all;
        for (auto& l : left) all += l + "\n";
        EXPECT_TRUE(left.empty()) << "left behind after signal " << sig << " of spinlab-run:\n" << all;
        fs::remove_all(d);
    }
}

}  // namespace
