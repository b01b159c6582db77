// collector/clock_sampler.cc: see clock_sampler.h.
#include "clock_sampler.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <sstream>

#include "hostlib/host_tsc.h"
#include "region_reader.h"

namespace spinlab::collect {
namespace {

// A bracket is narrow only if this thread runs at the moment of publication; on a loaded host a
// thread at the default priority is runnable but waiting for most of them (one 12 s run at
// load 10 on 2 cores: 8 of 55 brackets narrow). It sleeps most of the time, so a higher
// priority costs the others little. Not permitted (not root): the default, said by the bound.
constexpr int kNice = -10;
// The dense reader needs no precise moment (a publication stays a whole period), and waking a
// thread of higher weight on a busy CPU would preempt a vCPU every few milliseconds: the
// lowest priority, which wakes without preempting anyone.
constexpr int kDenseNice = 19;

// CLOCK_MONOTONIC runs at a rate NTP changes by parts per million now and then: pairs this far
// apart are exact to well under a nanosecond between them, and an hour's run keeps 72,000.
constexpr int64_t kHostPairSpacingNs = 50'000'000;

// The lead is this much above the latest forecasts' errors (the 90th percentile of the last
// kErrorsKept), and never outside [kMinLead, kMaxLead].
constexpr size_t kErrorsKept = 32;
constexpr std::chrono::microseconds kLeadMargin{50};

// The host CPU a thread last ran on (field 39 of /proc/TID/stat), or -1.
int last_host_cpu(uint64_t tid) {
    std::ifstream f("/proc/" + std::to_string(tid) + "/stat");
    std::string line;
    if (!std::getline(f, line)) return -1;
    auto close = line.rfind(')');  // the command name may hold spaces and parentheses
    if (close == std::string::npos) return -1;
    std::istringstream rest(line.substr(close + 1));
    std::string field;
    for (int i = 3; i <= 39 && rest >> field; ++i)
        if (i == 39) return std::atoi(field.c_str());
    return -1;
}

}  // namespace

PublicationForecast::Clock::time_point PublicationForecast::next_after(Clock::time_point t) const {
    if (t <= last_) return last_ + period_;
    auto periods = (t - last_ + period_ - Clock::duration(1)) / period_;  // rounded up
    return last_ + periods * period_;
}

std::chrono::microseconds PublicationForecast::lead() const {
    if (errors_.empty()) return kMaxLead;
    std::vector<Clock::duration> e(errors_.begin(), errors_.end());
    auto p90 = e.begin() + std::ptrdiff_t(e.size() * 9 / 10);
    std::nth_element(e.begin(), p90, e.end());
    auto lead = std::chrono::duration_cast<std::chrono::microseconds>(*p90 * 3 / 2) + kLeadMargin;
    return std::clamp(lead, std::chrono::microseconds(kMinLead), std::chrono::microseconds(kMaxLead));
}

void PublicationForecast::seen(Clock::time_point at, const Clock::time_point* expected, Clock::duration period) {
    if (expected) {
        errors_.push_back(at > *expected ? at - *expected : *expected - at);
        if (errors_.size() > kErrorsKept) errors_.pop_front();
    }
    known_ = true;
    last_ = at;
    period_ = period;
    misses_in_a_row_ = 0;
}

void PublicationForecast::missed() {
    if (++misses_in_a_row_ < kMissesToForget) return;
    known_ = false;
    misses_in_a_row_ = 0;
    errors_.clear();  // the phase moved (another CPU publishes now, or the guest stalled)
}

ClockSampler::ClockSampler(const std::string& path, std::chrono::milliseconds interval,
                           std::vector<uint64_t> vcpu_tids)
    : reader_(std::make_unique<RegionReader>(path, std::chrono::milliseconds(5000))),
      dense_reader_(std::make_unique<RegionReader>(path, std::chrono::milliseconds(5000))),
      vcpu_tids_(std::move(vcpu_tids)) {
    thread_ = std::thread([this, interval] {
        run("spinlab-clock", kNice, [&] { spin_until_stopped(interval); });
    });
    dense_thread_ = std::thread([this] { run("spinlab-clockref", kDenseNice, [&] { read_until_stopped(); }); });
}

ClockSampler::~ClockSampler() { stop(); }

void ClockSampler::stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (dense_thread_.joinable()) dense_thread_.join();
}

ClockSampler::Placement ClockSampler::placement() const {
    HostClock host(host_pairs_);
    Placement p{calibrate_reference(bracketed_refs_, host), {}};
    p.placed = reference_samples(readings_, p.calibration, host);  // none without a calibration
    return p;
}

std::vector<ClockSample> ClockSampler::samples() const {
    std::lock_guard<std::mutex> g(mu_);
    if (readings_.empty()) return samples_;
    Placement p = placement();
    return p.calibration.ok ? std::move(p.placed) : samples_;
}

ClockSampler::Reference ClockSampler::reference() const {
    std::lock_guard<std::mutex> g(mu_);
    Placement p = placement();
    return {ref_source_, readings_.size(), p.placed.size(), p.calibration};
}

std::string ClockSampler::error() const {
    std::lock_guard<std::mutex> g(mu_);
    return error_;
}

void ClockSampler::run(const char* name, int nice, const std::function<void()>& body) {
    pthread_setname_np(pthread_self(), name);  // how the host's timeline names it
    setpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)), nice);  // this thread only
    try {
        body();
    } catch (const std::exception& e) {  // a corrupt publication: keep what was taken
        std::lock_guard<std::mutex> g(mu_);
        if (error_.empty()) error_ = e.what();
    }
}

// Sleeps in short steps, to stop promptly.
void ClockSampler::sleep_until(std::chrono::steady_clock::time_point t) {
    using Clock = std::chrono::steady_clock;
    while (!stop_ && Clock::now() < t)
        std::this_thread::sleep_for(std::min<Clock::duration>(t - Clock::now(), std::chrono::milliseconds(20)));
}

// Moves this thread off the host CPU on which the publishing vCPU's thread last ran (when
// there is another CPU it may use), so that spinning here does not hold the publication up.
void ClockSampler::avoid_publisher(uint32_t guest_cpu) {
    static thread_local cpu_set_t allowed = [] {
        cpu_set_t s;
        CPU_ZERO(&s);
        sched_getaffinity(0, sizeof s, &s);
        return s;
    }();
    if (guest_cpu >= vcpu_tids_.size() || CPU_COUNT(&allowed) < 2) return;
    cpu_set_t set = allowed;
    int busy = last_host_cpu(vcpu_tids_[guest_cpu]);
    if (busy >= 0 && busy < CPU_SETSIZE && CPU_ISSET(busy, &set)) CPU_CLR(busy, &set);
    sched_setaffinity(0, sizeof set, &set);
}

void ClockSampler::read_until_stopped() {
    while (!stop_) {
        auto period = read_publication();
        sleep_until(Clock::now() + period / 3);  // each publication stays a period
    }
}

std::chrono::microseconds ClockSampler::read_publication() {
    HostClockPair pair;
    timespec ts;
    pair.tsc_before = host_tsc();
    clock_gettime(CLOCK_MONOTONIC, &ts);
    pair.tsc_after = host_tsc();
    pair.mono_ns = int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
    auto c = dense_reader_->clock();
    auto period = std::chrono::microseconds(c && c->period_us ? c->period_us : 10'000);
    std::lock_guard<std::mutex> g(mu_);
    if (host_pairs_.empty() || pair.mono_ns - host_pairs_.back().mono_ns >= kHostPairSpacingNs)
        host_pairs_.push_back(pair);
    if (!c || c->seq == last_seq_) return period;
    last_seq_ = c->seq;
    ref_source_ = clock_reference_name(ClockReference(c->ref_source));  // checked by RegionReader
    if (ClockReference(c->ref_source) != ClockReference::kNone)
        readings_.push_back({c->ref_guest_tsc, c->guest_tsc, c->ref_ticks, c->ref_period_fs});
    return period;
}

void ClockSampler::spin_once(PublicationForecast& forecast, std::optional<Clock::time_point> expected,
                             Clock::duration period) {
    auto c = reader_->clock();
    if (c) avoid_publisher(c->cpu);
    auto spin = expected ? std::chrono::duration_cast<std::chrono::microseconds>(2 * forecast.lead())
                         : std::chrono::duration_cast<std::chrono::microseconds>(period + 2 * PublicationForecast::kMaxLead);
    auto t0 = Clock::now();
    auto s = reader_->sample_clock(spin, kMaxClockBracket);
    auto seen = Clock::now();
    spun_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(seen - t0).count();
    if (!s) {
        ++missed_;
        forecast.missed();
        return;
    }
    // Only a narrow bracket returns at once; a wide one waited out the spin for a better.
    if (s->host_after - s->host_before <= kMaxClockBracket)
        forecast.seen(seen, expected ? &*expected : nullptr, period);
    auto pub = reader_->clock();  // the publication just bracketed, with its reference
    std::lock_guard<std::mutex> g(mu_);
    samples_.push_back(*s);
    if (pub && pub->guest_tsc == s->guest_tsc && ClockReference(pub->ref_source) != ClockReference::kNone)
        bracketed_refs_.push_back({*s, {pub->ref_guest_tsc, pub->guest_tsc, pub->ref_ticks, pub->ref_period_fs}});
    last_sample_ = seen;
}

void ClockSampler::spin_until_stopped(std::chrono::milliseconds interval) {
    PublicationForecast forecast;
    last_sample_ = Clock::now() - interval;
    Clock::time_point spin_at = Clock::now();
    std::optional<Clock::time_point> expected;  // the publication that spin is for (none: find the phase)
    while (!stop_) {
        auto c = reader_->clock();
        auto period = std::chrono::microseconds(c && c->period_us ? c->period_us : 10'000);
        if (Clock::now() >= spin_at) {
            spin_once(forecast, expected, period);
            bool referenced;
            {
                std::lock_guard<std::mutex> g(mu_);
                referenced = !readings_.empty();
            }
            // Spin again for the first publication at least an interval after the last sample,
            // waking a lead before it; while the phase is unknown, as soon as the interval allows.
            auto every = referenced ? std::max<Clock::duration>(interval, kRefSpinInterval) : Clock::duration(interval);
            auto earliest = std::max(last_sample_ + every, Clock::now());
            expected = forecast.known() ? std::optional(forecast.next_after(earliest + forecast.lead())) : std::nullopt;
            spin_at = expected ? *expected - forecast.lead() : earliest;
        }
        sleep_until(spin_at);
    }
}

}  // namespace spinlab::collect
