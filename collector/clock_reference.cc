// collector/clock_reference.cc: see clock_reference.h.
#include "clock_reference.h"

#include <algorithm>
#include <cmath>

namespace spinlab::collect {
namespace {

// A pair whose two TSC reads are further apart than this had the thread descheduled between
// them (1.6 us at 2.6 GHz); it says less than its neighbours and is left out.
constexpr uint64_t kMaxPairWidth = 4096;

// The sampler's threads read the host TSC on whichever host CPU they run, and those CPUs' TSCs
// may differ a little (this VM's two: about 100 cycles, fenced ping-pong): every bound allows
// twice that.
constexpr double kHostTscSkew = 200;

double ref_ns(const RefReading& r) { return double(r.ref_ticks) * (double(r.ref_period_fs) * 1e-6); }
double tick_ns(const RefReading& r) { return double(r.ref_period_fs) * 1e-6; }
double mid(const HostClockPair& p) { return (double(p.tsc_before) + double(p.tsc_after)) / 2; }

// y at x on the line through the two points of `pairs` around x (the nearest two at the ends).
template <class X, class Y>
double interpolate(const std::vector<HostClockPair>& pairs, double x, X x_of, Y y_of) {
    auto it = std::lower_bound(pairs.begin(), pairs.end(), x,
                               [&](const HostClockPair& p, double v) { return x_of(p) < v; });
    size_t i = size_t(std::clamp<std::ptrdiff_t>(it - pairs.begin(), 1, std::ptrdiff_t(pairs.size()) - 1));
    const HostClockPair &a = pairs[i - 1], &b = pairs[i];
    return y_of(a) + (x - x_of(a)) * (y_of(b) - y_of(a)) / (x_of(b) - x_of(a));
}

}  // namespace

HostClock::HostClock(std::vector<HostClockPair> pairs) {
    std::erase_if(pairs, [](const HostClockPair& p) {
        return p.tsc_after < p.tsc_before || p.tsc_after - p.tsc_before > kMaxPairWidth;
    });
    std::sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) { return a.tsc_before < b.tsc_before; });
    // Each pair strictly after the last kept in both clocks: no segment of no length.
    for (const HostClockPair& p : pairs)
        if (pairs_.empty() || (p.mono_ns > pairs_.back().mono_ns && mid(p) > mid(pairs_.back()))) pairs_.push_back(p);
    for (const HostClockPair& p : pairs_) err_cycles_ = std::max(err_cycles_, double(p.tsc_after - p.tsc_before) / 2);
    if (ok()) err_ns_ = err_cycles_ / cycles_per_ns();
}

double HostClock::cycles_per_ns() const {
    return (mid(pairs_.back()) - mid(pairs_.front())) / double(pairs_.back().mono_ns - pairs_.front().mono_ns);
}

double HostClock::mono_of(double tsc) const {
    return interpolate(pairs_, tsc, mid, [](const HostClockPair& p) { return double(p.mono_ns); });
}

double HostClock::tsc_of(double mono_ns) const {
    return interpolate(pairs_, mono_ns, [](const HostClockPair& p) { return double(p.mono_ns); }, mid);
}

RefCalibration calibrate_reference(std::span<const BracketedRef> bracketed, const HostClock& host) {
    RefCalibration c;
    if (!host.ok()) {
        c.why_not = "fewer than 2 host clock pairs";
        return c;
    }
    std::vector<double> uppers;
    c.lo_ns = -INFINITY;
    for (const BracketedRef& b : bracketed) {
        const ClockSample& s = b.bracket;
        if (s.host_after < s.host_before || b.ref.ref_guest_tsc > s.guest_tsc) continue;
        const double d = double(s.guest_tsc - b.ref.ref_guest_tsc);
        // The HPET was read at host TSC in [host_before - d, host_after]; its value is its time
        // rounded down to a tick.
        const double skew_ns = kHostTscSkew / host.cycles_per_ns();
        c.lo_ns = std::max(c.lo_ns, ref_ns(b.ref) - host.mono_of(double(s.host_after)) - host.error_ns() - skew_ns);
        uppers.push_back(ref_ns(b.ref) + tick_ns(b.ref) - host.mono_of(double(s.host_before) - d) + host.error_ns() + skew_ns);
    }
    if (uppers.size() < 2) {
        c.why_not = "fewer than 2 bracketed publications with a reference";
        return c;
    }
    std::sort(uppers.begin(), uppers.end());
    auto first_fit = std::lower_bound(uppers.begin(), uppers.end(), c.lo_ns);
    c.below_lower = size_t(first_fit - uppers.begin());
    const size_t n = size_t(uppers.end() - first_fit);
    if (n == 0 || c.below_lower * 2 > uppers.size()) {
        c.why_not = std::to_string(c.below_lower) + " of " + std::to_string(uppers.size()) +
                    " bracketed publications disagree with the others (late ones are a few; most "
                    "means the host's clocks disagree)";
        return c;
    }
    c.hi_ns = *(first_fit + std::ptrdiff_t(double(n) * kLateShare));
    c.used = uppers.size();
    c.ok = true;
    return c;
}

std::vector<ClockSample> reference_samples(std::span<const RefReading> readings, const RefCalibration& cal,
                                           const HostClock& host) {
    std::vector<ClockSample> out;
    if (!cal.ok || !host.ok()) return out;
    for (const RefReading& r : readings) {
        if (r.ref_guest_tsc > r.guest_tsc) continue;
        // The host's CLOCK_MONOTONIC when the HPET was read: [ref - hi, ref + tick - lo].
        const double mono = ref_ns(r) + tick_ns(r) / 2 - (cal.lo_ns + cal.hi_ns) / 2;
        const double half_ns = cal.half_width_ns() + tick_ns(r) / 2;
        const double h = host.tsc_of(mono);
        const double e = half_ns * host.cycles_per_ns() + host.error_cycles() + kHostTscSkew;
        const double d = double(r.guest_tsc - r.ref_guest_tsc);
        out.push_back({r.guest_tsc, uint64_t(std::llround(h - e)), uint64_t(std::llround(h + d + e))});
    }
    return out;
}

}  // namespace spinlab::collect
