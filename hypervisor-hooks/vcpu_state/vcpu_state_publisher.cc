#include "vcpu_state_publisher.h"

#include <sys/prctl.h>
#include <time.h>

#include <cerrno>
#include <cstdio>

#include "hypervisor-hooks/common/fs_util.h"
#include "hypervisor-hooks/common/host_clock.h"
#include "hypervisor-hooks/freezes/freeze_latency.h"

namespace spinlab::load {

namespace {
uint64_t raw_ns() {
    timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

void sleep_until(uint64_t mono_ns) {
    timespec ts{static_cast<time_t>(mono_ns / 1'000'000'000ull), static_cast<long>(mono_ns % 1'000'000'000ull)};
    while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
}
}  // namespace

uint32_t switch_off_bits(const SwitchRecord& r) {
    if (r.in) return 0;
    return r.preempt ? kVcpuOffPreempted : kVcpuOffBlocked;
}

std::vector<uint32_t> vcpu_indexes(const std::vector<ThreadTarget>& targets) {
    std::vector<uint32_t> out;
    for (const ThreadTarget& t : targets) {
        if (t.vcpu < 0) throw LoadError("--vcpu-state: thread " + std::to_string(t.tid) + " has no vCPU index");
        out.push_back(static_cast<uint32_t>(t.vcpu));
    }
    return out;
}

std::string PublishStats::json(const std::string& region) const {
    collect::JsonWriter w;
    w.begin_object()
        .field("source", source)
        .field("region", region)
        .field("period_us", period_us)
        .field("events", events)
        .field("published", published)
        .field("superseded", superseded)
        .field("unchanged", unchanged)
        .field("not_attached", not_attached)
        .field("late_polls", late_polls)
        .field("lost_records", lost_records)
        .key("latency_us");
    write_distribution(w, distribution(latency_us), "", 2);  // unit-agnostic: these are us
    w.end_object();
    return w.take();
}

std::string PublishStats::summary() const {
    const Distribution d = distribution(latency_us);
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "%llu %s, %llu stores; latency from the %s to the store: median %.1f us, p99 %.1f us, "
                  "max %.1f us; %llu superseded within a poll, %llu while the region was not laid out",
                  static_cast<unsigned long long>(events), source == "switches" ? "switches" : "freeze/thaw requests",
                  static_cast<unsigned long long>(published), source == "switches" ? "switch" : "request",
                  d.median_ms, d.p99_ms, d.max_ms, static_cast<unsigned long long>(superseded),
                  static_cast<unsigned long long>(not_attached));
    return buf;
}

SwitchPublishing::SwitchPublishing(VcpuStateWriter& writer, const std::vector<ThreadTarget>& targets)
    : writer_(writer) {
    for (const ThreadTarget& t : targets) vcpu_of_[t.tid] = static_cast<uint32_t>(t.vcpu);
    stats_.source = "switches";
}

bool SwitchPublishing::publish(const SwitchRecord& newest) {
    const auto it = vcpu_of_.find(newest.tid);
    if (it == vcpu_of_.end()) return false;  // not ours (a per-thread event records only its thread)
    const uint32_t bits = switch_off_bits(newest);
    if (writer_.bits(it->second) == bits) {
        ++stats_.unchanged;
        return false;
    }
    if (!writer_.set(it->second, bits)) {
        ++stats_.not_attached;
        return false;
    }
    ++stats_.published;
    return true;
}

SwitchPublisher::SwitchPublisher(const std::string& region, const std::vector<ThreadTarget>& targets,
                                 uint32_t period_us)
    : writer_(region, kVcpuStatePublisherSwitches, kVcpuOffPreempted | kVcpuOffBlocked, vcpu_indexes(targets)),
      recorder_([&] {
          std::vector<int> tids;
          for (const ThreadTarget& t : targets) tids.push_back(t.tid);
          return tids;
      }()),
      publishing_(writer_, targets),
      period_us_(period_us) {
    publishing_.stats().period_us = period_us;
}

SwitchPublisher::~SwitchPublisher() { stop(); }

void SwitchPublisher::start() {
    recorder_.enable();
    writer_.refresh();
    last_state_ = writer_.state();
    if (last_state_ != VcpuStateWriter::State::kAttached)
        std::fprintf(stderr, "timeline: vcpu-state: %s: %s\n", writer_.path().c_str(), writer_.why().c_str());
    thread_ = std::thread([this] { run(); });
}

void SwitchPublisher::stop() {
    stop_.store(true, std::memory_order_relaxed);
    if (thread_.joinable()) thread_.join();
    recorder_.disable();
    writer_.detach();
    publishing_.stats().lost_records = recorder_.lost();
}

void SwitchPublisher::run() {
    // The poll's own wake-ups should be on time: the default timer slack is 50 us.
    ::prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);
    const uint64_t period_ns = uint64_t(period_us_) * 1000;
    uint64_t next = monotonic_ns();
    try {
        while (!stop_.load(std::memory_order_relaxed)) {
            next += period_ns;
            const uint64_t now = monotonic_ns();
            if (now > next + period_ns) {  // a late wake-up: poll again at once, keep the phase from now
                ++publishing_.stats().late_polls;
                next = now;
            } else {
                sleep_until(next);
            }
            const VcpuStateWriter::State s = writer_.refresh();
            if (s != last_state_) {
                std::fprintf(stderr, "timeline: vcpu-state: %s %s%s%s\n", writer_.path().c_str(), vcpu_state_name(s),
                             writer_.why().empty() ? "" : ": ", writer_.why().c_str());
                last_state_ = s;
            }
            recorder_.drain();
            publishing_.apply(recorder_.take_records(), raw_ns);
        }
    } catch (const std::exception& e) {
        error_ = e.what();  // stop() reports it; the words are cleared there
    }
}

}  // namespace spinlab::load
