#include "freeze_schedule.h"

#include <algorithm>
#include <cmath>

#include "hypervisor-hooks/common/fs_util.h"

namespace spinlab::load {

ScheduleKind parse_schedule_kind(const std::string& text, const std::string& option) {
    if (text == "fixed") return ScheduleKind::kFixed;
    if (text == "uniform") return ScheduleKind::kUniform;
    if (text == "poisson") return ScheduleKind::kPoisson;
    throw LoadError("--" + option + " '" + text + "' must be fixed, uniform or poisson");
}

void validate_schedule(const ScheduleParams& p) {
    if (p.period_ns == 0) throw LoadError("--period-ms must be above 0");
    if (p.freeze_ns == 0) throw LoadError("--freeze-ms must be above 0");
    if (p.freeze_ns >= p.period_ns) {
        throw LoadError("--freeze-ms must be shorter than --period-ms (the thread must run "
                        "between freezes)");
    }
    if (p.freeze_max_ns && (p.freeze_max_ns < p.freeze_ns || p.freeze_max_ns >= p.period_ns)) {
        throw LoadError("--freeze-max-ms must lie between --freeze-ms and --period-ms");
    }
    if (p.phase_ns && p.kind != ScheduleKind::kFixed) {
        throw LoadError("--phase-ms applies to --schedule fixed only");
    }
    uint64_t longest = std::max(p.freeze_ns, p.freeze_max_ns);
    if (p.phase_ns > p.period_ns - longest) {
        throw LoadError("--phase-ms must leave room for a freeze inside the period");
    }
}

FreezeSchedule::FreezeSchedule(const ScheduleParams& params, uint64_t stream) : p_(params) {
    validate_schedule(p_);
    // Mix the stream into the seed so threads get independent, reproducible sequences.
    std::seed_seq seq{static_cast<uint32_t>(p_.seed), static_cast<uint32_t>(p_.seed >> 32),
                      static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)};
    rng_.seed(seq);
}

uint64_t FreezeSchedule::length() {
    if (p_.freeze_max_ns <= p_.freeze_ns) return p_.freeze_ns;
    return std::uniform_int_distribution<uint64_t>(p_.freeze_ns, p_.freeze_max_ns)(rng_);
}

FreezeWindow FreezeSchedule::next() {
    uint64_t len = length();
    uint64_t start = 0;
    switch (p_.kind) {
        case ScheduleKind::kFixed: start = p_.phase_ns + index_ * p_.period_ns; break;
        case ScheduleKind::kUniform: {
            uint64_t latest = p_.period_ns - len;
            start = index_ * p_.period_ns + std::uniform_int_distribution<uint64_t>(0, latest)(rng_);
            break;
        }
        case ScheduleKind::kPoisson: {
            double mean_gap = static_cast<double>(p_.period_ns - p_.freeze_ns);
            double gap = std::exponential_distribution<double>(1.0 / mean_gap)(rng_);
            start = previous_end_ + static_cast<uint64_t>(std::llround(gap));
            break;
        }
    }
    start = std::max(start, previous_end_);  // windows never overlap
    ++index_;
    previous_end_ = start + len;
    return {start, len};
}

}  // namespace spinlab::load
