// collector/commands.cc: dispatch, class selection and the stop signal shared by commands.
#include "commands.h"

#include <algorithm>
#include <atomic>
#include <csignal>

#include "hostlib/error.h"

namespace spinlab::collect {
namespace {

std::atomic<bool> g_stop{false};

void on_stop(int) { g_stop.store(true); }

}  // namespace

void install_stop_handlers() {
    struct sigaction sa {};
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
}

bool stop_requested() { return g_stop.load(); }

std::vector<uint32_t> select_classes(const std::vector<std::string>& wanted,
                                     const ClassNames& names) {
    std::vector<uint32_t> ids;
    for (const std::string& w : wanted) {
        bool found = false;
        for (uint32_t id = 0; id < names.names.size() && !found; ++id)
            if (names.names[id] == w) ids.push_back(id), found = true;
        if (!found && !w.empty() && w.find_first_not_of("0123456789") == std::string::npos &&
            w.size() < 6 && std::stoul(w) < kMaxLockClasses)
            ids.push_back(uint32_t(std::stoul(w))), found = true;
        if (!found) {
            std::string known;
            for (const std::string& n : names.names)
                if (!n.empty()) known += (known.empty() ? "" : ", ") + n;
            throw CollectError(kExitUsage, "no lock class named '" + w + "' (known: " +
                                               (known.empty() ? "none, use ids 0.." +
                                                                    std::to_string(kMaxLockClasses - 1)
                                                              : known) +
                                               ")");
        }
    }
    return ids;
}

std::vector<uint32_t> classes_to_show(const Config& c, const ClassNames& names,
                                      const Snapshot& s) {
    if (!c.classes.empty()) return select_classes(c.classes, names);
    if (!c.all_classes) return active_classes(s);
    std::vector<uint32_t> ids = active_classes(s);
    for (uint32_t id = 0; id < names.names.size(); ++id)
        if (!names.names[id].empty() && std::find(ids.begin(), ids.end(), id) == ids.end())
            ids.push_back(id);
    std::sort(ids.begin(), ids.end());
    return ids;
}

int run_command(const Config& c, std::ostream& out, std::ostream& err) {
    if (c.command == "trace" && c.trace.action == "dump") return run_trace_dump(c, out, err);
    if (c.command == "trace" && c.trace.action == "export") return run_trace_export(c, out, err);
    if (c.command == "trace" && c.trace.action == "stacks") return run_trace_stacks(c, out, err);
    Session s(c);
    if (c.command == "query") return run_query(s, c, out, err);
    if (c.command == "set") return run_set(s, c, out, err);
    if (c.command == "reset") return run_reset(s, c, out, err);
    if (c.command == "info") return run_info(s, c, out, err);
    if (c.command == "watch") return run_watch(s, c, out, err);
    if (c.command == "record") return run_record(s, c, out, err);
    if (c.command == "trace") return run_trace(s, c, out, err);
    throw CollectError(kExitUsage, "unknown command '" + c.command + "'");
}

}  // namespace spinlab::collect
