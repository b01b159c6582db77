// When to freeze a thread and for how long. Pure and deterministic: the same parameters and
// seed give the same windows, so an experiment's preemption pattern is reproducible.
//
//   fixed:    a window of `freeze` starts every `period`, at phase + k*period.
//   uniform:  one window per period, its start uniform in [k*period, (k+1)*period - freeze]:
//             the same duty cycle as fixed, without a fixed phase the guest could lock onto.
//   poisson:  gaps between the end of one window and the start of the next are exponential
//             with mean (period - freeze): a memoryless arrival process with the same mean rate.
//
// With freeze_max > freeze each window's length is uniform in [freeze, freeze_max].
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace spinlab::load {

enum class ScheduleKind { kFixed, kUniform, kPoisson };
ScheduleKind parse_schedule_kind(const std::string& text, const std::string& option);

struct ScheduleParams {
    ScheduleKind kind = ScheduleKind::kFixed;
    uint64_t period_ns = 100'000'000;
    uint64_t freeze_ns = 10'000'000;
    uint64_t freeze_max_ns = 0;  // 0: every window lasts freeze_ns
    uint64_t phase_ns = 0;       // fixed: offset of the first window
    uint64_t seed = 1;
};

// Throws LoadError naming the option (--period-ms, --freeze-ms, ...) when inconsistent:
// zero period, freeze not shorter than the period, freeze_max below freeze or above period,
// phase not below period - freeze.
void validate_schedule(const ScheduleParams& p);

struct FreezeWindow {
    uint64_t start_ns;  // offset from the schedule's origin
    uint64_t length_ns;
};

class FreezeSchedule {
public:
    // `stream` separates the random streams of several threads sharing one seed.
    FreezeSchedule(const ScheduleParams& params, uint64_t stream);
    // Windows come in increasing start order and never overlap.
    FreezeWindow next();

private:
    uint64_t length();
    ScheduleParams p_;
    std::mt19937_64 rng_;
    uint64_t index_ = 0;
    uint64_t previous_end_ = 0;
};

}  // namespace spinlab::load
