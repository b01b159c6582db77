#include "integration_support.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <sstream>
#include <thread>

#include "hostlib/testing/child_output.h"
#include "hypervisor-hooks/cgroups/cgroup_paths.h"
#include "hypervisor-hooks/common/fs_util.h"
#include "hypervisor-hooks/common/proc_info.h"
#include "hypervisor-hooks/timeline/tracefs.h"
#include "scratch_dir.h"

namespace spinlab::load::testing {

std::string need_root() {
    return ::geteuid() == 0 ? "" : "needs root (cgroups, tracefs, SCHED_FIFO)";
}

std::string temp_dir() {
    // Removed when the test process exits normally (the deque's destructor).
    static std::deque<ScratchDir> dirs;
    return dirs.emplace_back("spinlab-load-test").path();
}

ChildProcess::ChildProcess(std::vector<std::string> argv) {
    std::string dir = temp_dir();
    out_ = dir + "/stdout";
    err_ = dir + "/stderr";
    pid_ = spinlab::testing::spawn_with_output(argv, out_, err_);
}

ChildProcess::~ChildProcess() {
    if (!reaped_ && pid_ > 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
}

int ChildProcess::wait(double timeout_s) {
    int status = 0;
    if (!spinlab::testing::reap_within(pid_, std::chrono::duration<double>(timeout_s), &status)) return -1;
    reaped_ = true;
    return status;
}

std::string ChildProcess::stdout_text() const { return slurp(out_); }
std::string ChildProcess::stderr_text() const { return slurp(err_); }

FakeVcpus::FakeVcpus(int count, bool idle, bool switchy) {
    int in[2], out[2];
    if (::pipe(in) < 0 || ::pipe(out) < 0) throw LoadError("pipe failed");
    pid_ = ::fork();
    if (pid_ == 0) {
        ::dup2(in[0], 0);
        ::dup2(out[1], 1);
        ::close(in[1]);
        ::close(out[0]);
        std::string n = std::to_string(count);
        if (idle || switchy) {
            ::execl(SPINLAB_FAKE_VCPUS_BIN, SPINLAB_FAKE_VCPUS_BIN, n.c_str(), "60", idle ? "--idle" : "--switchy",
                    nullptr);
        } else {
            ::execl(SPINLAB_FAKE_VCPUS_BIN, SPINLAB_FAKE_VCPUS_BIN, n.c_str(), "60", nullptr);
        }
        ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    stdin_fd_ = in[1];
    std::string line;
    char c;
    while (::read(out[0], &c, 1) == 1 && c != '\n') line += c;
    ::close(out[0]);
    std::istringstream fields(line);
    int pid = 0, tid = 0;
    fields >> pid;
    while (fields >> tid) tids_.push_back(tid);
    if (pid != pid_ || static_cast<int>(tids_.size()) != count) {
        throw LoadError("spinlab-fake-vcpus did not report its threads: '" + line + "'");
    }
}

FakeVcpus::~FakeVcpus() {
    ::close(stdin_fd_);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
}

bool eventually(double timeout_s, const std::function<bool()>& done) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < deadline) {
        if (done()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return done();
}

std::vector<std::string> leftovers_of(int owner) {
    std::vector<std::string> found;
    std::string mounts = read_file("/proc/mounts");
    auto check = [&](const std::string& dir) {
        for (const std::string& name : list_directory(dir)) {
            if (owner_of_name(name) == owner) found.push_back(dir + "/" + name);
        }
    };
    for (const CgroupMount& m : parse_cgroup_mounts(mounts)) check(m.path);
    if (auto root = find_tracefs_root(mounts)) check(*root + "/instances");
    return found;
}

std::vector<int> children_named(int parent, const std::string& comm) {
    std::vector<int> pids;
    for (const std::string& name : list_directory("/proc")) {
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        int pid = std::stoi(name);
        if (!process_alive(pid) || thread_name(pid, pid) != comm) continue;
        try {
            std::string stat = read_file("/proc/" + name + "/stat");
            std::istringstream rest(stat.substr(stat.rfind(')') + 2));
            std::string state;
            int ppid = 0;
            rest >> state >> ppid;
            if (ppid == parent) pids.push_back(pid);
        } catch (const LoadError&) {
        }
    }
    return pids;
}

std::vector<std::map<std::string, std::string>> parse_csv(const std::string& text) {
    std::vector<std::map<std::string, std::string>> rows;
    std::istringstream in(text);
    std::string line;
    std::vector<std::string> header;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        std::vector<std::string> cells = split(line, ',');
        if (header.empty()) {
            header = cells;
            continue;
        }
        std::map<std::string, std::string> row;
        for (size_t i = 0; i < header.size() && i < cells.size(); ++i) row[header[i]] = cells[i];
        rows.push_back(row);
    }
    return rows;
}

std::string slurp(const std::string& path) {
    try {
        return read_file(path);
    } catch (const LoadError&) {
        return "";
    }
}

}  // namespace spinlab::load::testing
