// collector/clock_sampler.cc: see clock_sampler.h.
#include "clock_sampler.h"

#include "region_reader.h"

namespace spinlab::collect {
namespace {

// Wake this long before the expected publication: the guest's tick is late by the time its
// vCPU thread waits for a host CPU, and a wake-up is late by the host's scheduling latency.
constexpr auto kLead = std::chrono::microseconds(1500);

}  // namespace

ClockSampler::ClockSampler(const std::string& path, std::chrono::milliseconds interval)
    : reader_(std::make_unique<RegionReader>(path, std::chrono::milliseconds(5000))) {
    thread_ = std::thread([this, interval] { run(interval); });
}

ClockSampler::~ClockSampler() { stop(); }

void ClockSampler::stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
}

std::vector<ClockSample> ClockSampler::samples() const {
    std::lock_guard<std::mutex> g(mu_);
    return samples_;
}

void ClockSampler::run(std::chrono::milliseconds interval) {
    using Clock = std::chrono::steady_clock;
    RegionReader& r = *reader_;
    auto next = Clock::now();
    while (!stop_) {
        auto c = r.clock();
        auto period = std::chrono::microseconds(c && c->period_us ? c->period_us : 10'000);
        // Spin across one expected publication: up to one period plus the lead on either side.
        auto s = r.sample_clock(std::chrono::duration_cast<std::chrono::milliseconds>(period + 2 * kLead) +
                                    std::chrono::milliseconds(1),
                                kMaxClockBracket);
        auto seen = Clock::now();
        if (s) {
            std::lock_guard<std::mutex> g(mu_);
            samples_.push_back(*s);
        } else {
            ++missed_;
        }
        // The publication just seen was about `seen`; the next ones follow every period.
        // Sleep (in short steps, to stop promptly) until kLead before the first of them that
        // is at least `interval` after the last sample.
        next = seen;
        while (next - seen < interval) next += period;
        next -= kLead;
        while (!stop_ && Clock::now() < next)
            std::this_thread::sleep_for(std::min<Clock::duration>(next - Clock::now(), std::chrono::milliseconds(20)));
    }
}

}  // namespace spinlab::collect
