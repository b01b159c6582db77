// experiments/runner/locations_test.cc: spec names, the installed and the build-tree layouts.
#include "locations.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "spec.h"

namespace fs = std::filesystem;
using namespace spinlab::run;

namespace {

struct SpecDir : ::testing::Test {
    fs::path dir = fs::temp_directory_path() / ("spinlab-locations-" + std::to_string(getpid()));
    void SetUp() override {
        fs::create_directories(dir);
        std::ofstream(dir / "default.ini") << "[run]\nphases = idle-host\nduration = 3\n";
        std::ofstream(dir / "freeze.ini") << "[run]\nphases = freeze-20ms\n";
    }
    void TearDown() override { fs::remove_all(dir); }
};

TEST_F(SpecDir, NameWithOrWithoutIniIsTheSpecThere) {
    EXPECT_EQ(find_spec("freeze", dir.string()), (dir / "freeze.ini").string());
    EXPECT_EQ(find_spec("freeze.ini", dir.string()), (dir / "freeze.ini").string());
}

// preempt, the old name of the spec freeze (issue 53): found as freeze.ini.
TEST_F(SpecDir, PreemptIsTheOldNameOfFreeze) {
    EXPECT_EQ(find_spec("preempt", dir.string()), (dir / "freeze.ini").string());
    EXPECT_EQ(find_spec("preempt.ini", dir.string()), (dir / "freeze.ini").string());
    // A spec of its own of that name is still the one found.
    std::ofstream(dir / "preempt.ini") << "[run]\nphases = host-load\n";
    EXPECT_EQ(find_spec("preempt", dir.string()), (dir / "preempt.ini").string());
}

TEST_F(SpecDir, PathIsTakenAsGiven) {
    EXPECT_EQ(find_spec("./x/none.ini", dir.string()), "./x/none.ini");
    EXPECT_EQ(find_spec((dir / "default.ini").string(), "/nonexistent"), (dir / "default.ini").string());
}

TEST_F(SpecDir, UnknownNameListsTheSpecs) {
    try {
        find_spec("premept", dir.string());
        FAIL() << "no error";
    } catch (const SpecError& e) {
        EXPECT_EQ(std::string(e.what()), "--spec premept: no such file, and no spec of that name in " +
                                             dir.string() + " (there: default, freeze)");
    }
}

TEST_F(SpecDir, WithoutSpecTheDefaultSpecIsRead) {
    const char* argv[] = {"spinlab-run", "--run.duration", "5"};
    ParsedSpec p = parse_spec(3, argv, [&](const std::string& v) { return find_spec(v, dir.string()); });
    EXPECT_EQ(p.spec.spec_file, (dir / "default.ini").string());
    ASSERT_EQ(p.spec.run.phases.size(), 1u);
    EXPECT_EQ(p.spec.run.phases[0].name(), "idle-host");
    EXPECT_EQ(p.spec.run.duration_s, 5);  // the command line wins
}

TEST_F(SpecDir, SpecByName) {
    const char* argv[] = {"spinlab-run", "--spec", "freeze"};
    ParsedSpec p = parse_spec(3, argv, [&](const std::string& v) { return find_spec(v, dir.string()); });
    EXPECT_EQ(p.spec.run.phases[0].name(), "freeze-20ms");
    const char* old[] = {"spinlab-run", "--spec", "preempt"};
    ParsedSpec q = parse_spec(3, old, [&](const std::string& v) { return find_spec(v, dir.string()); });
    EXPECT_EQ(q.spec.spec_file, (dir / "freeze.ini").string());
    EXPECT_EQ(q.spec.run.phases[0].name(), "freeze-20ms");
}

TEST(Locations, InstalledUsesShareAndNoSourceTree) {
    Locations l = locations_for("/opt/sl/bin", true, "/src/spinlab");
    EXPECT_EQ(l.spec_dir, "/opt/sl/share/spinlab/experiments");
    EXPECT_EQ(l.source_dir, "");
    EXPECT_EQ(l.bin_dir, "/opt/sl/bin");
}

TEST(Locations, BuildTreeUsesTheSourceTree) {
    Locations l = locations_for("/src/spinlab/build/host/bin", false, "/src/spinlab");
    EXPECT_EQ(l.spec_dir, "/src/spinlab/experiments");
    EXPECT_EQ(l.source_dir, "/src/spinlab");
}

}  // namespace
