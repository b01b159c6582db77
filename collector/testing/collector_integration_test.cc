// Integration tests: spinlab-collect (the real binary) against spinlab-fake-guest (the real
// channel server, sysinfo handler and instrumented locks, on host threads).
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <spinlab/sysinfo.h>

#include "channel/region_header.h"
#include "channel_client.h"
#include "hostlib/error.h"
#include "hostlib/testing/child_output.h"
#include "region_reader.h"

#ifndef SPINLAB_BIN_DIR
#error "SPINLAB_BIN_DIR must name the directory holding spinlab-collect and spinlab-fake-guest"
#endif

namespace spinlab::collect {
namespace {

using namespace std::chrono_literals;

const std::string kBin = SPINLAB_BIN_DIR;

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

bool exists(const std::string& p) { return ::access(p.c_str(), F_OK) == 0; }

// A child process with stdout/stderr in files.
struct Child {
    pid_t pid = -1;
    std::string out, err;

    Child(std::vector<std::string> args, const std::string& dir, const std::string& tag)
        : out(dir + "/" + tag + ".out"), err(dir + "/" + tag + ".err") {
        pid = spinlab::testing::spawn_with_output(args, out, err);
    }
    // Exit status, or -signal; waits at most `limit` then kills (and fails the test).
    int wait(std::chrono::milliseconds limit = 20s) {
        int status = 0;
        if (!spinlab::testing::reap_within(pid, limit, &status)) {
            ADD_FAILURE() << "child did not exit in time; killing it";
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
        }
        pid = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    }
    void kill_now(int sig) { ::kill(pid, sig); }
    ~Child() {
        if (pid > 0) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
        }
    }
};

struct Result {
    int status;
    std::string out, err;
};

class CollectorIntegration : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/spinlab-collect-it.XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        socket_ = dir_ + "/control.sock";
        shm_ = dir_ + "/shm";
    }
    void TearDown() override {
        guest_.reset();
        std::string cmd = "rm -rf " + dir_;
        ASSERT_EQ(std::system(cmd.c_str()), 0);
    }

    void start_guest(std::vector<std::string> extra = {}) {
        std::vector<std::string> args = {kBin + "/spinlab-fake-guest", "--socket", socket_,
                                         "--shm", shm_, "--cpus", "2", "--locks", "2"};
        args.insert(args.end(), extra.begin(), extra.end());
        guest_ = std::make_unique<Child>(args, dir_, "guest");
        auto end = std::chrono::steady_clock::now() + 10s;
        while (slurp(guest_->out).find("ready") == std::string::npos) {
            ASSERT_LT(std::chrono::steady_clock::now(), end) << slurp(guest_->err);
            std::this_thread::sleep_for(10ms);
        }
    }

    Result collect(std::vector<std::string> args) {
        args.insert(args.begin(), kBin + "/spinlab-collect");
        Child c(args, dir_, "collect" + std::to_string(runs_++));
        int st = c.wait(30s);
        return {st, slurp(c.out), slurp(c.err)};
    }
    std::vector<std::string> attach() { return {"--socket", socket_, "--shm", shm_}; }

    // Merged rows of a csv query: metric -> class -> value (histograms summed per class).
    struct Totals {
        std::map<std::string, std::map<std::string, uint64_t>> v;
        uint64_t get(const std::string& cls, const std::string& metric) { return v[metric][cls]; }
    };
    Totals parse_csv(const std::string& csv) {
        Totals t;
        std::istringstream in(csv);
        std::string line;
        std::getline(in, line);
        EXPECT_EQ(line, "cpu,class_id,class,metric,bucket,value");
        while (std::getline(in, line)) {
            std::vector<std::string> f;
            std::stringstream ls(line);
            for (std::string x; std::getline(ls, x, ',');) f.push_back(x);
            if (f.size() != 6 || f[0] != "all") continue;
            t.v[f[3]][f[2]] += std::stoull(f[5]);
        }
        return t;
    }
    Totals query_csv(const std::string& source) {
        auto args = attach();
        args.insert(args.begin(), "query");
        args.insert(args.end(), {"--format", "csv", "--source", source});
        Result r = collect(args);
        EXPECT_EQ(r.status, 0) << r.err;
        return parse_csv(r.out);
    }
    static int64_t invariant_error(Totals& t, const std::string& cls) {
        return int64_t(t.get(cls, "uncontended") + t.get(cls, "wait_hist") +
                       t.get(cls, "wait_overflow")) -
               int64_t(t.get(cls, "acquisitions"));
    }

    std::string dir_, socket_, shm_;
    std::unique_ptr<Child> guest_;
    int runs_ = 0;
};

TEST_F(CollectorIntegration, QueryWhileRunningSeesTotalsGrowAndTheInvariantHold) {
    start_guest();
    Totals a = query_csv("region");
    std::this_thread::sleep_for(300ms);
    Totals b = query_csv("channel");
    std::this_thread::sleep_for(300ms);
    Totals c = query_csv("region");
    for (std::string cls : {"bench0", "bench1"}) {
        EXPECT_GT(a.get(cls, "acquisitions"), 0u) << cls;
        EXPECT_GT(b.get(cls, "acquisitions"), a.get(cls, "acquisitions")) << cls;
        EXPECT_GT(c.get(cls, "acquisitions"), b.get(cls, "acquisitions")) << cls;
        // Read while the owners record: each CPU may have a few records in flight during
        // the copy (perfdata.h accepts that skew), never more.
        for (Totals* t : {&a, &b, &c}) EXPECT_LE(std::llabs(invariant_error(*t, cls)), 16) << cls;
    }
}

TEST_F(CollectorIntegration, QuiescentCountersMatchTheWorkloadsOwnCountExactly) {
    std::string count_file = dir_ + "/count";
    start_guest({"--run-ms", "400", "--count-file", count_file});
    auto end = std::chrono::steady_clock::now() + 10s;
    while (!exists(count_file)) {
        ASSERT_LT(std::chrono::steady_clock::now(), end);
        std::this_thread::sleep_for(10ms);
    }
    uint64_t expected = std::stoull(slurp(count_file));
    ASSERT_GT(expected, 0u);
    for (const char* source : {"region", "channel"}) {
        Totals t = query_csv(source);
        EXPECT_EQ(t.get("bench0", "acquisitions") + t.get("bench1", "acquisitions"), expected)
            << source;
        EXPECT_EQ(invariant_error(t, "bench0"), 0) << source;
        EXPECT_EQ(invariant_error(t, "bench1"), 0) << source;
    }
    // reset zeroes them, through the guest's handler.
    auto args = attach();
    args.insert(args.begin(), "reset");
    Result r = collect(args);
    EXPECT_EQ(r.status, 0) << r.err;
    Totals z = query_csv("region");
    EXPECT_EQ(z.get("bench0", "acquisitions") + z.get("bench1", "acquisitions"), 0u);
}

TEST_F(CollectorIntegration, GarbageFramesDoNotStopTheNextValidQuery) {
    start_guest();
    {
        ChannelClient client(socket_, 3000ms);
        std::vector<uint8_t> junk(3000);
        for (size_t i = 0; i < junk.size(); ++i) junk[i] = uint8_t(i * 131 + 7);
        const char fake[] = "SLCF this is not a header at all, just text...";
        junk.insert(junk.end(), fake, fake + sizeof fake);
        client.send_raw(junk);
        // A well-formed request with a bad payload checksum: answered with an error frame.
        std::vector<uint8_t> bad(kFrameHeaderSize + 20);
        uint8_t p[20] = {5};
        frame_encode(frame_request(FrameOp::kSet, 777, 0x1F, 5, 20), p, 20, bad.data(),
                     uint32_t(bad.size()));
        bad[kFrameHeaderSize + 4] ^= 1;
        client.send_raw(bad);
        CallResult r = client.query(uint32_t(InfoClass::kSpinlabSystemConfiguration), 0, {},
                                    sizeof(SystemConfiguration));
        EXPECT_EQ(r.status, 0u);
        ASSERT_EQ(r.data.size(), sizeof(SystemConfiguration));
        SystemConfiguration cfg;
        std::memcpy(&cfg, r.data.data(), sizeof cfg);
        EXPECT_EQ(cfg.cpu_count, 2u);
    }
    RegionReader region(shm_, 1000ms);
    ChannelServerStats s = region.channel_stats();
    EXPECT_GE(s.skipped_bytes, 2000u);
    EXPECT_EQ(s.rejected[uint32_t(FrameError::kBadPayloadChecksum)], 1u);
    EXPECT_GE(s.errors_sent, 1u);
    // And a fresh collector still gets its answer.
    auto args = attach();
    args.insert(args.begin(), "query");
    args.push_back("--source");
    args.push_back("channel");
    Result q = collect(args);
    EXPECT_EQ(q.status, 0) << q.err;
    EXPECT_NE(q.out.find("uncontended"), std::string::npos);
}

TEST_F(CollectorIntegration, RecordKeepsEverySnapshotWhenTheGuestIsKilled) {
    start_guest();
    std::string file = dir_ + "/record.jsonl";
    auto args = attach();
    args.insert(args.begin(), {kBin + "/spinlab-collect", "record"});
    args.insert(args.end(), {"-i", "0.1", "--stall-timeout", "1", "-o", file});
    Child rec(args, dir_, "record");
    auto lines_of = [&] {
        std::vector<std::string> lines;
        std::istringstream in(slurp(file));
        for (std::string l; std::getline(in, l);) lines.push_back(l);
        return lines;
    };
    auto end = std::chrono::steady_clock::now() + 15s;
    while (lines_of().size() < 6) {  // header + 5 snapshots
        ASSERT_LT(std::chrono::steady_clock::now(), end) << slurp(rec.err);
        std::this_thread::sleep_for(20ms);
    }
    size_t before_kill = lines_of().size() - 1;
    guest_->kill_now(SIGKILL);
    guest_->wait();
    int st = rec.wait(15s);
    EXPECT_EQ(st, kExitGuestGone) << slurp(rec.err);
    EXPECT_NE(slurp(rec.err).find("holds all"), std::string::npos) << slurp(rec.err);

    std::vector<std::string> lines = lines_of();
    ASSERT_GE(lines.size(), before_kill + 2);
    EXPECT_NE(lines.front().find("\"type\":\"header\""), std::string::npos);
    EXPECT_NE(lines.back().find("\"type\":\"end\""), std::string::npos);
    EXPECT_NE(lines.back().find("the guest went away"), std::string::npos);
    size_t snapshots = lines.size() - 2;
    EXPECT_GE(snapshots, before_kill);
    EXPECT_NE(lines.back().find("\"snapshots\":" + std::to_string(snapshots)), std::string::npos);
    for (size_t i = 0; i < snapshots; ++i) {
        const std::string& l = lines[i + 1];
        EXPECT_NE(l.find("{\"type\":\"snapshot\",\"seq\":" + std::to_string(i) + ","),
                  std::string::npos)
            << "line " << i + 1;
        EXPECT_EQ(l.back(), '}') << "line " << i + 1 << " is torn";
    }
}

TEST_F(CollectorIntegration, SetBelowAMinimumIsRefusedNamingTheParameter) {
    start_guest();
    auto args = attach();
    args.insert(args.begin(), "set");
    auto low = args;
    low.insert(low.end(), {"--hold-threshold", "5"});
    Result r = collect(low);
    EXPECT_EQ(r.status, kExitFailure);
    EXPECT_NE(r.err.find("STATUS_INVALID_PARAMETER"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("SpinLockHoldThreshold"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("1000000"), std::string::npos) << r.err;
    auto ok = args;
    ok.insert(ok.end(), {"--hold-threshold", "2000000", "--acquire-sample-rate", "5000"});
    Result s = collect(ok);
    EXPECT_EQ(s.status, 0) << s.err;
    EXPECT_NE(s.out.find("SpinLockHoldThreshold        2000000"), std::string::npos) << s.out;
    EXPECT_NE(s.out.find("SpinLockAcquireSampleRate    5000"), std::string::npos) << s.out;
    // A later set of one parameter keeps the others.
    auto one = args;
    one.insert(one.end(), {"--spin-threshold", "7"});
    Result t = collect(one);
    EXPECT_EQ(t.status, 0) << t.err;
    EXPECT_NE(t.out.find("SpinLockHoldThreshold        2000000"), std::string::npos) << t.out;
}

TEST_F(CollectorIntegration, WatchPrintsIntervalDeltas) {
    start_guest();
    auto args = attach();
    args.insert(args.begin(), "watch");
    args.insert(args.end(), {"-i", "0.2", "-c", "3", "--format", "csv"});
    Result r = collect(args);
    EXPECT_EQ(r.status, 0) << r.err;
    size_t headers = 0;
    for (size_t p = 0; (p = r.out.find("cpu,class_id", p)) != std::string::npos; ++p) ++headers;
    EXPECT_EQ(headers, 2u);  // 3 snapshots: a baseline and two deltas
    // Each block holds one interval's increments, not totals: together they stay below what
    // the counters show now. (A single interval may see nothing on an overloaded host: the
    // workers' lock holder can be preempted for a whole host time slice.)
    size_t second = r.out.rfind("cpu,class_id");
    Totals d1 = parse_csv(r.out.substr(0, second));
    Totals d2 = parse_csv(r.out.substr(second));
    uint64_t delta = d1.get("bench0", "acquisitions") + d2.get("bench0", "acquisitions");
    EXPECT_GT(delta, 0u);
    EXPECT_LT(delta, query_csv("region").get("bench0", "acquisitions"));
}

TEST_F(CollectorIntegration, InfoReportsConfigurationAndAClockFit) {
    start_guest({"--run-ms", "50"});
    auto args = attach();
    args.insert(args.begin(), "info");
    args.insert(args.end(), {"--format", "json", "--clock-samples", "12"});
    Result r = collect(args);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("\"cpus\":2"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"build_id\":\"fake-guest\""), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"ok\":true"), std::string::npos) << r.out;
}

TEST_F(CollectorIntegration, NoVmGivesOneSentenceAndExit3) {
    Result r = collect({"query", "--socket", dir_ + "/nothing.sock"});
    EXPECT_EQ(r.status, kExitNoVm);
    EXPECT_NE(r.err.find("no VM at"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    Result v = collect({"query", "--vm", "absent", "--run-dir", dir_});
    EXPECT_EQ(v.status, kExitNoVm);
    EXPECT_NE(v.err.find("no VM named absent"), std::string::npos) << v.err;
}

TEST_F(CollectorIntegration, AGuestThatDoesNotAnswerTimesOut) {
    // A socket that accepts and never answers: what a hung guest looks like.
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, socket_.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::listen(fd, 1), 0);
    Result r = collect({"info", "--socket", socket_, "--timeout", "300"});
    ::close(fd);
    EXPECT_EQ(r.status, kExitNoVm);
    EXPECT_NE(r.err.find("did not answer within 300 ms"), std::string::npos) << r.err;
}

TEST_F(CollectorIntegration, AnotherRegionAbiVersionIsRefused) {
    std::vector<uint64_t> mem(1 << 17);
    ASSERT_EQ(region_layout(mem.data(), mem.size() * 8, 2, 0, 0), RegionError::kNone);
    reinterpret_cast<RegionHeader*>(mem.data())->abi_version = kRegionAbiVersion + 1;
    {
        std::ofstream f(shm_, std::ios::binary);
        f.write(reinterpret_cast<const char*>(mem.data()), std::streamsize(mem.size() * 8));
    }
    Result r = collect({"query", "--shm", shm_});
    EXPECT_EQ(r.status, kExitAbi);
    EXPECT_NE(r.err.find("ABI version mismatch"), std::string::npos) << r.err;
}

TEST_F(CollectorIntegration, VmNameResolvesThroughTheRunDirectory) {
    start_guest({"--run-ms", "50"});
    std::string vm = dir_ + "/vm/lab1";
    ASSERT_EQ(std::system(("mkdir -p " + vm).c_str()), 0);
    ASSERT_EQ(::symlink(socket_.c_str(), (vm + "/control.sock").c_str()), 0);
    ASSERT_EQ(::symlink(shm_.c_str(), (vm + "/shm").c_str()), 0);
    Result r = collect({"query", "--vm", "lab1", "--run-dir", dir_, "--format", "json"});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("\"name\":\"bench0\""), std::string::npos) << r.out;
}

}  // namespace
}  // namespace spinlab::collect
