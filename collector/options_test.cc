// Command line and config file parsing: values land in Config, bad input is named.
#include "options.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "hostlib/error.h"

namespace spinlab::collect {
namespace {

ParsedArgs parse(std::vector<const char*> args) {
    args.insert(args.begin(), "spinlab-collect");
    return parse_args(int(args.size()), args.data());
}

std::string error_of(std::vector<const char*> args) {
    try {
        parse(args);
    } catch (const CollectError& e) {
        EXPECT_EQ(e.exit_code(), kExitUsage);
        return e.what();
    }
    return "no error";
}

TEST(Options, ParsesAQueryWithGroupedOptions) {
    Config c = parse({"query", "--vm", "lab1", "--format", "csv", "--per-cpu", "--class", "sched",
                      "--class", "3", "--timeout", "500"})
                   .config;
    EXPECT_EQ(c.command, "query");
    EXPECT_EQ(c.attach.vm, "lab1");
    EXPECT_EQ(c.format, "csv");
    EXPECT_TRUE(c.per_cpu);
    EXPECT_EQ(c.classes, (std::vector<std::string>{"sched", "3"}));
    EXPECT_EQ(c.timeout_ms, 500u);
}

TEST(Options, ParsesSetParametersAndSeries) {
    Config c = parse({"set", "--socket", "/s", "--hold-threshold", "2000000", "--spin-threshold",
                      "0"})
                   .config;
    EXPECT_EQ(c.hold_threshold, 2000000u);
    EXPECT_EQ(c.spin_threshold, 0u);  // below its minimum: the guest refuses it, not us
    EXPECT_FALSE(c.acquire_sample_rate);
    Config r = parse({"record", "--shm", "/x", "-i", "0.25", "-c", "10", "-o", "out.jsonl"}).config;
    EXPECT_DOUBLE_EQ(r.interval_s, 0.25);
    EXPECT_EQ(r.count, 10u);
    EXPECT_EQ(r.output, "out.jsonl");
}

TEST(Options, HelpEndsWithExamples) {
    ParsedArgs a = parse({"--help"});
    EXPECT_TRUE(a.help);
    size_t ex = a.usage.find("EXAMPLES\n");
    ASSERT_NE(ex, std::string::npos);
    EXPECT_EQ(a.usage.find("\n\n", ex), std::string::npos);  // nothing after the examples
}

TEST(Options, BadInputIsNamed) {
    EXPECT_NE(error_of({}).find("no command given"), std::string::npos);
    EXPECT_NE(error_of({"frobnicate"}).find("unknown command 'frobnicate'"), std::string::npos);
    EXPECT_NE(error_of({"set", "--socket", "s", "--hold-threshold", "-1"}).find("--hold-threshold"),
              std::string::npos);
    EXPECT_NE(error_of({"set", "--socket", "s", "--hold-threshold", "99999999999"})
                  .find("at most 4294967295"),
              std::string::npos);
    EXPECT_NE(error_of({"set", "--socket", "s"}).find("set needs at least one"),
              std::string::npos);
    EXPECT_NE(error_of({"record", "--shm", "x"}).find("--output"), std::string::npos);
    EXPECT_NE(error_of({"watch", "--shm", "x", "-i", "0"}).find("--interval"), std::string::npos);
    EXPECT_NE(error_of({"query", "--format", "xml"}).find("'xml'"), std::string::npos);
    EXPECT_NE(error_of({"query", "--source", "disk"}).find("'disk'"), std::string::npos);
    EXPECT_NE(error_of({"query", "--bogus"}).find("bogus"), std::string::npos);
}

TEST(Options, AConfigFileUsesTheSameNamesAndTheCommandLineWins) {
    std::string path = ::testing::TempDir() + "/collect.ini";
    {
        std::ofstream f(path);
        f << "command = record\nvm = lab2\ninterval = 2\noutput = from-file.jsonl\n"
             "hold-threshold = 3000000\n";
    }
    Config c = parse({"--config", path.c_str(), "-o", "from-cli.jsonl"}).config;
    EXPECT_EQ(c.command, "record");
    EXPECT_EQ(c.attach.vm, "lab2");
    EXPECT_DOUBLE_EQ(c.interval_s, 2);
    EXPECT_EQ(c.output, "from-cli.jsonl");
    EXPECT_EQ(c.hold_threshold, 3000000u);
    std::remove(path.c_str());
    EXPECT_NE(error_of({"--config", "/nonexistent/x.ini"}).find("cannot read config file"),
              std::string::npos);
}

}  // namespace
}  // namespace spinlab::collect
