#include "proc_info.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

namespace spinlab::load {
namespace {

TEST(ProcInfo, StartTimeSurvivesCommsWithParenthesesAndSpaces) {
    std::string stat = "123 (a) b (c) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 987654 20 21";
    EXPECT_EQ(parse_stat_start_time(stat), 987654u);
    EXPECT_FALSE(parse_stat_start_time("garbage"));
    EXPECT_FALSE(parse_stat_start_time("1 (x) R 1 2"));
}

TEST(ProcInfo, AliveDeadAndZombie) {
    EXPECT_TRUE(process_alive(::getpid()));
    EXPECT_TRUE(process_start_time(::getpid()));
    EXPECT_EQ(thread_group_of(::getpid()), ::getpid());
    pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    ::usleep(100000);
    EXPECT_FALSE(process_alive(child)) << "a zombie counts as dead";
    ::waitpid(child, nullptr, 0);
    EXPECT_FALSE(process_alive(child));
    EXPECT_FALSE(process_start_time(child));
}

TEST(ProcInfo, PidLines) {
    EXPECT_EQ(parse_pid_lines("1\n22\n333\n"), (std::vector<int>{1, 22, 333}));
    EXPECT_TRUE(parse_pid_lines("").empty());
}

}  // namespace
}  // namespace spinlab::load
