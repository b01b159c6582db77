// hostlib/run_dir_test.cc: the run directory's rule (run_dir.h) with what it reads passed in (a
// temporary directory stands for /run/user), the per-user directory under TMPDIR made 0700 and
// refused when another user could control it, and run_dir() throwing that refusal.
// vm-images/tests/test_run_dir.py checks that Python's rule says the same.
#include "run_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "error.h"

namespace spinlab {
namespace {

namespace fs = std::filesystem;

const std::string kHint =
    "set SPINLAB_RUN_DIR (or XDG_RUNTIME_DIR, for a user other than root) to a directory you may write";

class RunDir : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/spinlab-run-dir-test-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string dir_;
};

TEST_F(RunDir, ExplicitThenRootThenXdg) {
    EXPECT_EQ(resolve_run_dir("/x", "/run/user/1000", "/t", 1000, dir_), "/x");
    EXPECT_EQ(resolve_run_dir("/x", nullptr, nullptr, 0, dir_), "/x");
    EXPECT_EQ(resolve_run_dir("", "/run/user/1000", "/t", 0, dir_), "/run/spinlab");
    EXPECT_EQ(resolve_run_dir(nullptr, nullptr, nullptr, 0, dir_), "/run/spinlab");
    EXPECT_EQ(resolve_run_dir("", "/run/user/1000", "/t", 1000, dir_), "/run/user/1000/spinlab");
    EXPECT_EQ(resolve_run_dir(nullptr, "/run/user/1000/", nullptr, 1000, dir_), "/run/user/1000/spinlab");
}

TEST_F(RunDir, WithoutXdgTheLoginsRuntimeDirectoryWhenItIsTheUsers) {
    // A directory of the user's under run_user: used. Named for another uid, a symbolic link, or
    // a file: not, and the per-user directory under TMPDIR is the answer.
    const uid_t me = geteuid() == 0 ? 65534 : geteuid();
    const std::string login = dir_ + "/" + std::to_string(me);
    EXPECT_EQ(resolve_run_dir(nullptr, "", "/t", me, dir_), "/t/spinlab-" + std::to_string(me));  // absent
    ASSERT_EQ(::mkdir(login.c_str(), 0700), 0);
    ASSERT_EQ(::chown(login.c_str(), me, me), 0);
    EXPECT_EQ(resolve_run_dir(nullptr, "", "/t", me, dir_), login + "/spinlab");
    EXPECT_EQ(resolve_run_dir(nullptr, nullptr, "/t", me, dir_ + "/"), login + "/spinlab");
    const uid_t other = me + 1;  // login's owner is not `other`
    ASSERT_EQ(::rename(login.c_str(), (dir_ + "/" + std::to_string(other)).c_str()), 0);
    EXPECT_EQ(resolve_run_dir(nullptr, nullptr, "/t", other, dir_), "/t/spinlab-" + std::to_string(other));
    ASSERT_EQ(::symlink((dir_ + "/" + std::to_string(other)).c_str(), login.c_str()), 0);  // a link to one of me
    EXPECT_EQ(resolve_run_dir(nullptr, nullptr, "/t", me, dir_), "/t/spinlab-" + std::to_string(me));
}

TEST_F(RunDir, TmpdirWhenAbsoluteElseTmp) {
    EXPECT_EQ(tmp_run_dir(nullptr, 1000), "/tmp/spinlab-1000");
    EXPECT_EQ(tmp_run_dir("", 1000), "/tmp/spinlab-1000");
    EXPECT_EQ(tmp_run_dir("relative/dir", 1000), "/tmp/spinlab-1000");
    EXPECT_EQ(tmp_run_dir("/var/tmp/", 1000), "/var/tmp/spinlab-1000");
    EXPECT_EQ(tmp_run_dir("/", 7), "/spinlab-7");
}

TEST_F(RunDir, ThePerUserDirectoryIsMade0700AndKeptWhenItIsTheUsersAlone) {
    const std::string p = dir_ + "/spinlab-1";
    const uid_t me = geteuid();
    EXPECT_EQ(claim_tmp_run_dir(p, me), "");
    struct stat st;
    ASSERT_EQ(::lstat(p.c_str(), &st), 0);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0700u);
    EXPECT_EQ(claim_tmp_run_dir(p, me), "");  // there already, still fine
    ASSERT_EQ(::chmod(p.c_str(), 0755), 0);
    EXPECT_EQ(claim_tmp_run_dir(p, me), "");
    // A parent it cannot be made in: not refused here (making it fails later, and says so).
    EXPECT_EQ(claim_tmp_run_dir(dir_ + "/absent/spinlab-1", me), "");
}

TEST_F(RunDir, APlantedDirectoryIsRefusedNamingThePathAndItsOwner) {
    const std::string p = dir_ + "/spinlab-1";
    const uid_t me = geteuid();
    ASSERT_EQ(::mkdir(p.c_str(), 0700), 0);
    // Another user's (here: ours, judged for uid 65534).
    EXPECT_EQ(claim_tmp_run_dir(p, 65534),
              "refusing the run directory " + p + ": it is owned by " + run_dir_detail::who(me) +
                  ", not by you, " + run_dir_detail::who(65534) +
                  ", and a run directory someone else controls is never used; remove it or " + kHint);
    // Ours, but others may write it.
    ASSERT_EQ(::chmod(p.c_str(), 0777), 0);
    EXPECT_EQ(claim_tmp_run_dir(p, me),
              "refusing the run directory " + p + ": it is yours, " + run_dir_detail::who(me) +
                  ", but others may write it (mode 0777), and a run directory someone else controls is "
                  "never used; remove it or " + kHint);
    // A symbolic link (to a good directory of ours), and a file.
    ASSERT_EQ(::chmod(p.c_str(), 0700), 0);
    const std::string link = dir_ + "/spinlab-2";
    ASSERT_EQ(::symlink(p.c_str(), link.c_str()), 0);
    EXPECT_EQ(claim_tmp_run_dir(link, me).rfind("refusing the run directory " + link + ": it is a symbolic link, "
                                                "owned by " + run_dir_detail::who(me) + ", ", 0),
              0u);
    const std::string file = dir_ + "/spinlab-3";
    std::FILE* f = std::fopen(file.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
    EXPECT_EQ(claim_tmp_run_dir(file, me).rfind("refusing the run directory " + file + ": it is not a directory; "
                                                "its owner is " + run_dir_detail::who(me) + ", ", 0),
              0u);
}

TEST(RunDirWho, NamesTheUserWhenThereIsOne) {
    EXPECT_EQ(run_dir_detail::who(0), "root (uid 0)");
    EXPECT_EQ(run_dir_detail::who(4000000000u), "uid 4000000000");
}

// run_dir() of a user other than root without XDG_RUNTIME_DIR, in a child of that uid: the
// exit status says what happened (0: returned `expect`, 1: returned another, 2: refused).
int run_dir_as(uid_t uid, const std::string& tmpdir, const std::string& expect) {
    const pid_t pid = fork();
    if (pid == 0) {
        if (setresgid(uid, uid, uid) != 0 || setresuid(uid, uid, uid) != 0) _exit(3);
        unsetenv("SPINLAB_RUN_DIR");
        unsetenv("XDG_RUNTIME_DIR");
        setenv("TMPDIR", tmpdir.c_str(), 1);
        try {
            _exit(run_dir() == expect ? 0 : 1);
        } catch (const collect::CollectError& e) {
            _exit(e.exit_code() == collect::kExitUsage ? 2 : 4);
        }
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST_F(RunDir, RunDirThrowsTheRefusal) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (a child becomes uid 65534)";
    ::chmod(dir_.c_str(), 01777);  // a shared /tmp of its own
    struct stat st;
    if (::lstat("/run/user/65534", &st) == 0) GTEST_SKIP() << "/run/user/65534 exists: the rule takes it";
    const std::string mine = dir_ + "/spinlab-65534";
    EXPECT_EQ(run_dir_as(65534, dir_, mine), 0);
    ASSERT_EQ(::lstat(mine.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 65534u);
    EXPECT_EQ(st.st_mode & 07777, 0700u);
    fs::remove_all(mine);
    ASSERT_EQ(::mkdir(mine.c_str(), 0755), 0);  // planted by root
    EXPECT_EQ(run_dir_as(65534, dir_, mine), 2);
}

}  // namespace
}  // namespace spinlab
