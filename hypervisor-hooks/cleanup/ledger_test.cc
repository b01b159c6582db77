#include "ledger.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hypervisor-hooks/common/fs_util.h"
#include "hypervisor-hooks/common/proc_info.h"
#include "hypervisor-hooks/testing/scratch_dir.h"
#include "stale_cleanup.h"

namespace spinlab::load {
namespace {

TEST(LedgerEntries, RoundTripEveryKind) {
    std::vector<LedgerEntry> entries = {
        {LedgerEntry::Kind::kCgroup, "/sys/fs/cgroup/freezer/spinlab-1-freeze-2", "", 0, 0},
        {LedgerEntry::Kind::kMove, "/sys/fs/cgroup/freezer/spinlab-1-freeze-2",
         "/sys/fs/cgroup/freezer/tasks", 2, 0},
        {LedgerEntry::Kind::kProcess, "", "", 77, 123456},
        {LedgerEntry::Kind::kInstance, "/sys/kernel/tracing/instances/spinlab-1-timeline", "", 0, 0}};
    std::string text;
    for (const LedgerEntry& e : entries) text += format_ledger_entry(e) + "\n";
    std::vector<LedgerEntry> back = parse_ledger(text);
    ASSERT_EQ(back.size(), entries.size());
    for (size_t i = 0; i < entries.size(); ++i) {
        EXPECT_EQ(back[i].kind, entries[i].kind);
        EXPECT_EQ(back[i].path, entries[i].path);
        EXPECT_EQ(back[i].file, entries[i].file);
        EXPECT_EQ(back[i].id, entries[i].id);
        EXPECT_EQ(back[i].start, entries[i].start);
    }
}

TEST(LedgerEntries, TornLastLineIsDroppedMalformedLinesAreErrors) {
    EXPECT_EQ(parse_ledger("cgroup\t/a\ninstance\t/b").size(), 1u);
    EXPECT_THROW(parse_ledger_entry("cgroup\trelative"), LoadError);
    EXPECT_THROW(parse_ledger_entry("process\tx\t1"), LoadError);
    EXPECT_THROW(parse_ledger_entry("mount\t/a"), LoadError);
    EXPECT_THROW(format_ledger_entry({LedgerEntry::Kind::kCgroup, "/a\tb", "", 0, 0}), LoadError);
}

TEST(Ledger, FileMirrorsEntriesAndUndoRemovesItAndWhatItNames) {
    testing::ScratchDir scratch("spinlab-ledger-test");
    const std::string& dir = scratch.path();
    // Plain directories stand in for cgroups and trace instances: undo removes them.
    std::string fake_cgroup = dir + "/spinlab-1-x";
    ASSERT_EQ(::mkdir(fake_cgroup.c_str(), 0755), 0);
    {
        Ledger ledger(dir + "/state", 4242);
        ledger.record({LedgerEntry::Kind::kCgroup, fake_cgroup, "", 0, 0});
        EXPECT_EQ(parse_ledger(read_file(ledger.file())).size(), 1u);
        EXPECT_TRUE(undo_ledger({}).empty());
        std::vector<std::string> problems = ledger.undo_all();
        EXPECT_TRUE(problems.empty());
        EXPECT_FALSE(path_exists(fake_cgroup));
        EXPECT_FALSE(path_exists(ledger.file()));
        EXPECT_TRUE(ledger.undo_all().empty()) << "undo twice is harmless";
    }
}

TEST(Ledger, UndoKillsRecordedProcessOnlyIfStartTimeMatches) {
    pid_t child = ::fork();
    if (child == 0) {
        ::pause();
        ::_exit(0);
    }
    uint64_t start = process_start_time(child).value();
    // Wrong start time: a different process that reused the pid must survive.
    undo_ledger({{LedgerEntry::Kind::kProcess, "", "", child, start + 1}});
    EXPECT_TRUE(process_alive(child));
    undo_ledger({{LedgerEntry::Kind::kProcess, "", "", child, start}});
    EXPECT_FALSE(process_alive(child));
}

TEST(StaleCleanup, UndoesLedgersOfDeadOwnersOnly) {
    testing::ScratchDir scratch("spinlab-stale-test");
    const std::string& dir = scratch.path();
    pid_t dead = ::fork();
    if (dead == 0) ::_exit(0);
    ::waitpid(dead, nullptr, 0);
    std::string dead_dir = dir + "/owned-by-dead", live_dir = dir + "/owned-by-me";
    ASSERT_EQ(::mkdir(dead_dir.c_str(), 0755), 0);
    ASSERT_EQ(::mkdir(live_dir.c_str(), 0755), 0);
    auto write_ledger = [&](int owner, const std::string& path) {
        std::string file = Ledger::file_for(dir, owner);
        FILE* f = std::fopen(file.c_str(), "w");
        std::fprintf(f, "%s\n", format_ledger_entry({LedgerEntry::Kind::kCgroup, path, "", 0, 0}).c_str());
        std::fclose(f);
        return file;
    };
    std::string dead_ledger = write_ledger(dead, dead_dir);
    std::string live_ledger = write_ledger(::getpid(), live_dir);
    CleanupReport report = cleanup_stale(dir, std::nullopt);
    EXPECT_FALSE(path_exists(dead_dir));
    EXPECT_FALSE(path_exists(dead_ledger));
    EXPECT_TRUE(path_exists(live_dir)) << "a live owner's resources are not touched";
    EXPECT_TRUE(path_exists(live_ledger));
    // The guardian's call names its owner explicitly, alive or not.
    cleanup_stale(dir, ::getpid());
    EXPECT_FALSE(path_exists(live_dir));
    EXPECT_FALSE(path_exists(live_ledger));
}

}  // namespace
}  // namespace spinlab::load
