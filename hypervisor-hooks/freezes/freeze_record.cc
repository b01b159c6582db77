#include "freeze_record.h"

#include <algorithm>
#include <cstdint>
#include <sstream>

#include "hypervisor-hooks/common/fs_util.h"

namespace spinlab::load {

std::string freeze_record_header() {
    return "seq,tid,vcpu,planned_begin_tsc,planned_end_tsc,begin_tsc,marked_tsc,frozen_tsc,end_tsc,"
           "thawed_tsc,stopped_tsc,resumed_tsc,effective,planned_begin_ns,planned_end_ns,begin_ns,marked_ns,"
           "frozen_ns,end_ns,thawed_ns,stopped_ns,resumed_ns\n";
}

std::string format_freeze_record(const FreezeRecord& r, const std::function<uint64_t(uint64_t)>& to_ns) {
    const uint64_t tscs[] = {r.planned_begin_tsc, r.planned_end_tsc, r.begin_tsc,         r.marked_tsc,
                             r.frozen_tsc,        r.end_tsc,         r.thawed_tsc,        r.effective.stopped,
                             r.effective.resumed};
    std::ostringstream out;
    out << r.seq << ',' << r.tid << ',' << r.vcpu;
    for (size_t i = 0; i < 7; ++i) out << ',' << tscs[i];
    out << ',' << r.effective.stopped << ',' << r.effective.resumed << ','
        << effective_status_name(r.effective.status);
    for (uint64_t t : tscs) out << ',' << (t ? to_ns(t) : 0);
    out << '\n';
    return out.str();
}

std::vector<FrozenSpan> read_frozen_spans(const std::string& record_csv) {
    std::istringstream in(record_csv);
    std::string line;
    std::vector<std::string> header;
    size_t c_tid = 0, c_stopped = 0, c_resumed = 0, c_effective = 0;
    auto column = [&](const char* name) {
        auto it = std::find(header.begin(), header.end(), name);
        if (it == header.end()) throw LoadError(std::string("the freeze record has no column ") + name);
        return static_cast<size_t>(it - header.begin());
    };
    std::vector<FrozenSpan> out;
    for (size_t n = 1; std::getline(in, line); ++n) {
        if (line.empty()) continue;
        std::vector<std::string> f = split(line, ',');
        if (header.empty()) {
            header = f;
            c_tid = column("tid"), c_stopped = column("stopped_tsc"), c_resumed = column("resumed_tsc");
            c_effective = column("effective");
            continue;
        }
        const std::string where = "the freeze record, line " + std::to_string(n);
        if (f.size() != header.size())
            throw LoadError(where + ": " + std::to_string(f.size()) + " fields, the header has " +
                            std::to_string(header.size()));
        auto number = [&](size_t c) -> uint64_t {
            const std::string& v = f[c];
            if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos)
                throw LoadError(where + ": " + header[c] + " '" + v + "' is not a number");
            return std::stoull(v);
        };
        const std::string& status = f[c_effective];
        const uint64_t stopped = number(c_stopped), resumed = number(c_resumed);
        const int tid = static_cast<int>(number(c_tid));
        if (status == effective_status_name(EffectiveStatus::kOk)) {
            if (resumed < stopped) throw LoadError(where + ": resumed_tsc is before stopped_tsc");
            out.push_back({tid, stopped, resumed});
        } else if (status == effective_status_name(EffectiveStatus::kNotResumed)) {
            if (stopped) out.push_back({tid, stopped, UINT64_MAX});
        } else if (status != effective_status_name(EffectiveStatus::kNeverStopped) &&
                   status != effective_status_name(EffectiveStatus::kNoEvents)) {
            throw LoadError(where + ": unknown effective status '" + status + "'");
        }
    }
    return out;
}

}  // namespace spinlab::load
