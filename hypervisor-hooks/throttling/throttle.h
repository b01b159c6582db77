// `throttle`: cut threads' CPU bandwidth with the cgroup cpu controller (CFS bandwidth control):
// each thread may run `quota` per `period` (v1 cpu.cfs_quota_us / cpu.cfs_period_us, v2
// cpu.max "quota period"). When the quota is used up the thread is throttled until the next
// period: the off-CPU gaps a vCPU sees on an overcommitted host, but with a known shape.
#pragma once

#include <cstdint>
#include <string>

#include "hypervisor-hooks/cgroups/thread_cgroup.h"
#include "hypervisor-hooks/cleanup/command_session.h"
#include "hypervisor-hooks/targets/thread_targets.h"

namespace spinlab::load {

struct ThrottleConfig {
    TargetSpec targets;
    CgroupMethod method = CgroupMethod::kAuto;
    double quota_pct = 50;       // of one CPU, per thread
    uint64_t period_us = 100000; // CFS period: 1000 .. 1000000 us
    double duration_s = 0;       // 0: until signalled
};

void validate_throttle(const ThrottleConfig& c);
// Quota in us for one period; at least the kernel's minimum of 1000 us.
uint64_t throttle_quota_us(const ThrottleConfig& c);
// The text written to v2 cpu.max ("50000 100000").
std::string cpu_max_text(uint64_t quota_us, uint64_t period_us);
int run_throttle(Session& session, const ThrottleConfig& c);

}  // namespace spinlab::load
