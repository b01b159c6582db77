// A minimal QMP client (QEMU Machine Protocol: JSON objects, one per line, over a UNIX socket):
// read the greeting, negotiate with qmp_capabilities, then run commands, skipping the
// asynchronous {"event": ...} messages that may arrive in between.
#pragma once

#include <string>
#include <vector>

namespace spinlab::load {

struct QmpCpu {
    int cpu_index;
    int thread_id;  // host thread id of the vCPU
    std::string qom_path;
};

// Parses the reply of query-cpus-fast ({"return": [{"cpu-index": 0, "thread-id": 123, ...}]}).
// Throws LoadError naming what is missing, or carrying QMP's error description.
std::vector<QmpCpu> parse_query_cpus_fast(const std::string& reply);
// True for an asynchronous event line ({"event": ...}).
bool is_qmp_event(const std::string& line);

class QmpClient {
public:
    // Connects and negotiates capabilities; `timeout_ms` bounds every read.
    explicit QmpClient(const std::string& socket_path, int timeout_ms = 5000);
    ~QmpClient();
    QmpClient(const QmpClient&) = delete;
    QmpClient& operator=(const QmpClient&) = delete;
    // Sends {"execute": command} and returns the reply line (events skipped).
    std::string execute(const std::string& command);

private:
    std::string read_line();
    std::string path_;
    int fd_ = -1;
    int timeout_ms_;
    std::string buffer_;
};

std::vector<QmpCpu> query_vcpus_over_qmp(const std::string& socket_path);

}  // namespace spinlab::load
