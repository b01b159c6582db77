// collector/clock_sampler.cc: see clock_sampler.h.
#include "clock_sampler.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "region_reader.h"

namespace spinlab::collect {
namespace {

// Wake this long before the expected publication: the guest's tick is late by the time its
// vCPU thread waits for a host CPU, and a wake-up is late by the host's scheduling latency.
constexpr auto kLead = std::chrono::microseconds(1500);

// A bracket is narrow only if this thread runs at the moment of publication; on a loaded host a
// thread at the default priority is runnable but waiting for most of them (one 12 s run at
// load 10 on 2 cores: 8 of 55 brackets narrow). It sleeps ~95% of the time, so a higher
// priority costs the others little. Not permitted (not root): the default, said by the bound.
constexpr int kNice = -10;

// Attempts right after one that saw no publication, before sleeping until the next interval.
constexpr int kRetries = 2;

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

std::string ClockSampler::error() const {
    std::lock_guard<std::mutex> g(mu_);
    return error_;
}

void ClockSampler::run(std::chrono::milliseconds interval) {
    try {
        sample_until_stopped(interval);
    } catch (const std::exception& e) {  // a corrupt publication: keep what was taken
        std::lock_guard<std::mutex> g(mu_);
        error_ = e.what();
    }
}

void ClockSampler::sample_until_stopped(std::chrono::milliseconds interval) {
    using Clock = std::chrono::steady_clock;
    setpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)), kNice);  // this thread only
    RegionReader& r = *reader_;
    auto next = Clock::now();
    int misses_in_a_row = 0;
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
            misses_in_a_row = 0;
        } else {
            ++missed_;
            // The publishing vCPU was held up (descheduled, or frozen by an injector): try the
            // next publication at once, a few times, rather than lose a whole interval.
            if (++misses_in_a_row <= kRetries) continue;
            misses_in_a_row = 0;
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
