#include "throttle.h"

#include <cmath>
#include <cstdio>

#include "hypervisor-hooks/common/fs_util.h"
#include "hypervisor-hooks/common/host_clock.h"

namespace spinlab::load {

void validate_throttle(const ThrottleConfig& c) {
    validate_target_spec(c.targets);
    if (!(c.quota_pct > 0 && c.quota_pct < 100)) {
        throw LoadError("--quota-pct " + std::to_string(c.quota_pct) +
                        " must be above 0 and below 100 (percent of one CPU)");
    }
    if (c.period_us < 1000 || c.period_us > 1000000) {
        throw LoadError("--period-us " + std::to_string(c.period_us) + " must be in [1000, 1000000]");
    }
    if (throttle_quota_us(c) < 1000) {
        throw LoadError("--quota-pct " + std::to_string(c.quota_pct) + " of --period-us " +
                        std::to_string(c.period_us) + " is below the kernel's minimum quota of 1000 us");
    }
    if (c.duration_s < 0) throw LoadError("--duration must not be negative");
}

uint64_t throttle_quota_us(const ThrottleConfig& c) {
    return static_cast<uint64_t>(std::llround(static_cast<double>(c.period_us) * c.quota_pct / 100.0));
}

std::string cpu_max_text(uint64_t quota_us, uint64_t period_us) {
    return std::to_string(quota_us) + " " + std::to_string(period_us);
}

int run_throttle(Session& session, const ThrottleConfig& c) {
    validate_throttle(c);
    std::vector<ThreadTarget> targets = resolve_targets(c.targets);
    CgroupChoice choice = choose_hierarchy_on_host("cpu", c.method);
    ThreadCgroups cgroups(session.ledger(), session.owner(), "throttle", choice, "cpu");
    const uint64_t quota = throttle_quota_us(c);
    for (const ThreadTarget& t : targets) {
        std::string dir = cgroups.add(t);
        if (choice.version == CgroupVersion::kV1) {
            write_file(dir + "/cpu.cfs_period_us", std::to_string(c.period_us));
            write_file(dir + "/cpu.cfs_quota_us", std::to_string(quota));
        } else {
            write_file(dir + "/cpu.max", cpu_max_text(quota, c.period_us));
        }
    }
    std::fprintf(stderr, "throttle: %zu thread(s) to %llu us per %llu us via cgroup %s at %s\n",
                 targets.size(), static_cast<unsigned long long>(quota),
                 static_cast<unsigned long long>(c.period_us),
                 choice.version == CgroupVersion::kV1 ? "v1" : "v2", choice.mount.c_str());
    session.mark_ready();
    const uint64_t end = c.duration_s > 0 ? monotonic_ns() + static_cast<uint64_t>(c.duration_s * 1e9) : 0;
    session.wait_until(end);
    std::fprintf(stderr, "throttle: stopped%s%s\n", session.stopped() ? " by " : "",
                 session.stop_reason().c_str());
    return 0;
}

}  // namespace spinlab::load
