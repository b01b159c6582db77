#include "qmp_client.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "hypervisor-hooks/common/fs_util.h"
#include "hypervisor-hooks/testing/scratch_dir.h"

namespace spinlab::load {
namespace {

const char* kReply =
    R"({"return": [{"thread-id": 5001, "props": {"core-id": 0, "thread-id": 0, "socket-id": 0},)"
    R"( "qom-path": "/machine/unattached/device[0]", "cpu-index": 0, "target": "x86_64"},)"
    R"( {"thread-id": 5002, "props": {"core-id": 0, "socket-id": 1}, "qom-path": "/machine/x",)"
    R"( "cpu-index": 1, "target": "x86_64"}]})";

TEST(QmpParse, QueryCpusFast) {
    auto cpus = parse_query_cpus_fast(kReply);
    ASSERT_EQ(cpus.size(), 2u);
    EXPECT_EQ(cpus[0].cpu_index, 0);
    EXPECT_EQ(cpus[0].thread_id, 5001);
    EXPECT_EQ(cpus[1].thread_id, 5002);
    EXPECT_EQ(cpus[0].qom_path, "/machine/unattached/device[0]");
}

TEST(QmpParse, ErrorsCarryQmpsDescriptionOrSayWhatIsMissing) {
    try {
        parse_query_cpus_fast(R"({"error": {"class": "CommandNotFound", "desc": "no such command"}})");
        FAIL();
    } catch (const LoadError& e) {
        EXPECT_STREQ(e.what(), "QMP query-cpus-fast failed: no such command");
    }
    EXPECT_THROW(parse_query_cpus_fast(R"({"return": [{"cpu-index": 0}]})"), LoadError);
    EXPECT_THROW(parse_query_cpus_fast(R"({"return": []})"), LoadError);
    EXPECT_THROW(parse_query_cpus_fast("{not json"), LoadError);
    EXPECT_TRUE(is_qmp_event(R"({"event": "RESUME", "timestamp": {"seconds": 1, "microseconds": 2}})"));
    EXPECT_FALSE(is_qmp_event(R"({"return": {}})"));
}

// A scripted QMP server: an event before the greeting (QEMU 7.2 did that once), greeting,
// capabilities negotiation, an event before the reply.
TEST(QmpClient, NegotiatesAndSkipsEvents) {
    testing::ScratchDir scratch("spinlab-qmp-test");
    std::string path = scratch.path() + "/qmp.sock";
    int server = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.c_str());
    ASSERT_EQ(::bind(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::listen(server, 1), 0);
    std::vector<std::string> received;
    std::thread qemu([&] {
        int c = ::accept(server, nullptr, nullptr);
        auto send = [&](const std::string& s) { ::write(c, s.data(), s.size()); };
        auto receive = [&] {
            std::string line;
            char ch;
            while (::read(c, &ch, 1) == 1 && ch != '\n') line += ch;
            received.push_back(line);
        };
        send(R"({"timestamp": {"seconds": 1, "microseconds": 0}, "event": "RESUME"})" "\n");
        send(R"({"QMP": {"version": {"qemu": {"micro": 0, "minor": 2, "major": 7}}, "capabilities": []}})" "\n");
        receive();
        send("{\"return\": {}}\r\n");
        receive();
        send(R"({"timestamp": {"seconds": 1, "microseconds": 2}, "event": "STOP"})" "\n");
        send(std::string(kReply) + "\n");
        ::close(c);
    });
    std::vector<QmpCpu> cpus = query_vcpus_over_qmp(path);
    qemu.join();
    ::close(server);
    ASSERT_EQ(received.size(), 2u);
    EXPECT_EQ(received[0], R"({"execute": "qmp_capabilities"})");
    EXPECT_EQ(received[1], R"({"execute": "query-cpus-fast"})");
    ASSERT_EQ(cpus.size(), 2u);
    EXPECT_EQ(cpus[1].thread_id, 5002);
}

TEST(QmpClient, MissingSocketNamesThePath) {
    try {
        QmpClient c("/nonexistent/qmp.sock", 100);
        FAIL();
    } catch (const LoadError& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/qmp.sock"), std::string::npos);
    }
}

}  // namespace
}  // namespace spinlab::load
