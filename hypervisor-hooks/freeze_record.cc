#include "freeze_record.h"

#include <sstream>

namespace spinlab::load {

std::string freeze_record_header() {
    return "seq,tid,vcpu,planned_begin_tsc,planned_end_tsc,begin_tsc,marked_tsc,frozen_tsc,end_tsc,"
           "stopped_tsc,resumed_tsc,effective,planned_begin_ns,planned_end_ns,begin_ns,marked_ns,frozen_ns,"
           "end_ns,stopped_ns,resumed_ns\n";
}

std::string format_freeze_record(const FreezeRecord& r, const std::function<uint64_t(uint64_t)>& to_ns) {
    const uint64_t tscs[] = {r.planned_begin_tsc, r.planned_end_tsc,   r.begin_tsc,
                             r.marked_tsc,        r.frozen_tsc,        r.end_tsc,
                             r.effective.stopped, r.effective.resumed};
    std::ostringstream out;
    out << r.seq << ',' << r.tid << ',' << r.vcpu;
    for (size_t i = 0; i < 6; ++i) out << ',' << tscs[i];
    out << ',' << r.effective.stopped << ',' << r.effective.resumed << ','
        << effective_status_name(r.effective.status);
    for (uint64_t t : tscs) out << ',' << (t ? to_ns(t) : 0);
    out << '\n';
    return out.str();
}

}  // namespace spinlab::load
