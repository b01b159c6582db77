// experiments/runner/child_test.cc: the cleanup logic of the runner's children: stop escalates
// from SIGTERM to SIGKILL, a missing program is an error at start, and a child dies with its
// parent (PR_SET_PDEATHSIG), which is what makes a SIGKILLed runner leave nothing behind.
#include "child.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <thread>

namespace spinlab::run {
namespace {

bool process_gone(pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    if (!f) return true;
    std::string stat;
    std::getline(f, stat);
    auto p = stat.rfind(')');
    return p != std::string::npos && p + 2 < stat.size() && stat[p + 2] == 'Z';  // a zombie is gone
}

TEST(Child, StopsWithSigterm) {
    Child c({"/bin/sleep", "100"}, "");
    EXPECT_TRUE(c.running());
    auto t0 = std::chrono::steady_clock::now();
    int st = c.stop();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
    EXPECT_TRUE(WIFSIGNALED(st));
    EXPECT_EQ(WTERMSIG(st), SIGTERM);
    EXPECT_EQ(Child::describe(st), "was killed by SIGTERM");
}

TEST(Child, EscalatesToSigkill) {
    Child c({"/bin/sh", "-c", "trap '' TERM; sleep 100 & wait; sleep 100"}, "");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    int st = c.stop(std::chrono::milliseconds(300));
    EXPECT_TRUE(WIFSIGNALED(st));
    EXPECT_EQ(WTERMSIG(st), SIGKILL);
}

TEST(Child, ReportsExitStatusAndLog) {
    std::string log = testing::TempDir() + "child_test_" + std::to_string(getpid()) + ".log";
    unlink(log.c_str());
    Child c({"/bin/sh", "-c", "echo hello; exit 3"}, log);
    while (c.running()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(Child::describe(*c.poll()), "exited with status 3");
    std::ifstream f(log);
    std::string line;
    std::getline(f, line);
    EXPECT_EQ(line, "hello");
}

TEST(Child, MissingProgramIsAnError) {
    try {
        Child c({"/nonexistent/spinlab-load", "hog"}, "");
        FAIL() << "started";
    } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()),
                  "cannot start /nonexistent/spinlab-load: No such file or directory");
    }
}

TEST(Child, DiesWithItsParent) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t middle = fork();
    ASSERT_GE(middle, 0);
    if (middle == 0) {
        close(fds[0]);
        Child* c = new Child({"/bin/sleep", "100"}, "");  // never destroyed: we die abruptly
        pid_t pid = c->pid();
        if (write(fds[1], &pid, sizeof pid) != sizeof pid) _exit(2);
        raise(SIGKILL);  // like the runner SIGKILLed
        _exit(1);
    }
    close(fds[1]);
    pid_t grandchild = -1;
    ASSERT_EQ(read(fds[0], &grandchild, sizeof grandchild), ssize_t(sizeof grandchild));
    close(fds[0]);
    int st;
    waitpid(middle, &st, 0);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!process_gone(grandchild) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_TRUE(process_gone(grandchild)) << "pid " << grandchild << " outlived its parent";
    kill(grandchild, SIGKILL);
}

TEST(Child, WaitForFile) {
    std::string f = testing::TempDir() + "child_ready_" + std::to_string(getpid());
    unlink(f.c_str());
    Child c({"/bin/sh", "-c", "sleep 0.2; touch " + f + "; sleep 100"}, "");
    EXPECT_TRUE(wait_for_file(f, c, std::chrono::seconds(5)));
    c.stop();
    unlink(f.c_str());
    Child d({"/bin/sh", "-c", "exit 1"}, "");
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_FALSE(wait_for_file(f, d, std::chrono::seconds(5)));  // the child ended: no waiting on
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
}

}  // namespace
}  // namespace spinlab::run
