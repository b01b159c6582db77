// collector/clock_sync.cc: see clock_sync.h.
#include "clock_sync.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace spinlab::collect {
namespace {

// The offset may move between two samples by drift alone; a late publication must stand out
// by more than that. 100 ppm is far above any TSC pair measured here (QEMU's steps aside,
// which move the level for good and so never look like a spike).
constexpr double kDriftAllowancePpm = 100;

struct Candidate {
    uint64_t g;
    int64_t lo, hi;  // offset bounds host_before - g and host_after - g
};

bool above(const Candidate& c, const Candidate& n) {
    double gap = std::fabs(double(int64_t(c.g - n.g)));
    return double(c.lo - n.hi) > gap * kDriftAllowancePpm * 1e-6;
}

// Least squares y = a + b x over the points (x, y relative to the references).
bool least_squares(const std::vector<double>& xs, const std::vector<double>& ys, double* a,
                   double* b) {
    const size_t n = xs.size();
    if (n < 2) return false;
    double mx = 0, my = 0;
    for (size_t i = 0; i < n; ++i) mx += xs[i], my += ys[i];
    mx /= double(n), my /= double(n);
    double sxx = 0, sxy = 0;
    for (size_t i = 0; i < n; ++i) {
        sxx += (xs[i] - mx) * (xs[i] - mx);
        sxy += (xs[i] - mx) * (ys[i] - my);
    }
    if (!(sxx > 0)) return false;
    *b = sxy / sxx;
    *a = my - *b * mx;
    return true;
}

double segment_bound(const ClockPoint& p, const ClockPoint& q) {
    return std::max(p.half_width, q.half_width) + std::fabs(double(q.offset - p.offset));
}

}  // namespace

ClockFit fit_clock(std::span<const ClockSample> samples, uint64_t max_bracket) {
    ClockFit fit;
    fit.total = samples.size();
    std::vector<Candidate> cand;
    for (const ClockSample& s : samples) {
        if (s.host_after < s.host_before) {
            ++fit.rejected_unordered;
            continue;
        }
        if (s.host_after - s.host_before > max_bracket) {
            ++fit.rejected_wide;
            continue;
        }
        cand.push_back({s.guest_tsc, int64_t(s.host_before - s.guest_tsc),
                        int64_t(s.host_after - s.guest_tsc)});
    }
    std::sort(cand.begin(), cand.end(), [](const Candidate& x, const Candidate& y) { return x.g < y.g; });

    // A late publication stands above its neighbours on both sides (at the ends: above the
    // next two on its one side).
    std::vector<bool> late(cand.size(), false);
    for (size_t i = 0; i < cand.size(); ++i) {
        bool prev = i >= 1 ? above(cand[i], cand[i - 1]) : (i + 2 < cand.size() && above(cand[i], cand[i + 2]));
        bool next = i + 1 < cand.size() ? above(cand[i], cand[i + 1])
                                        : (i >= 2 && above(cand[i], cand[i - 2]));
        late[i] = cand.size() >= 3 && prev && next;
    }
    for (size_t i = 0; i < cand.size(); ++i) {
        if (late[i]) {
            ++fit.rejected_late;
            continue;
        }
        const Candidate& c = cand[i];
        if (!fit.points.empty() && fit.points.back().guest_tsc == c.g) continue;  // same publication
        // Exact in integers: the middle of [lo, hi] rounded down, half the width as a double.
        fit.points.push_back({c.g, c.lo + (c.hi - c.lo) / 2, double(c.hi - c.lo) / 2});
        fit.max_width = std::max(fit.max_width, double(c.hi - c.lo));
    }
    fit.used = fit.points.size();
    if (fit.used < 2) {
        fit.error = "need at least 2 clock samples with distinct guest TSCs and brackets of at most " +
                    std::to_string(max_bracket) + " host cycles, have " + std::to_string(fit.used) +
                    " of " + std::to_string(fit.total) + " (" + std::to_string(fit.rejected_unordered) +
                    " unordered, " + std::to_string(fit.rejected_wide) + " wide, " +
                    std::to_string(fit.rejected_late) + " late)";
        fit.points.clear();
        return fit;
    }

    fit.guest_ref = fit.points.front().guest_tsc;
    fit.host_ref = fit.guest_ref + uint64_t(fit.points.front().offset);
    std::vector<double> xs, ys;
    for (const ClockPoint& p : fit.points) {
        double x = double(p.guest_tsc - fit.guest_ref);
        xs.push_back(x);
        ys.push_back(x + double(p.offset - fit.points.front().offset));
    }
    double a = 0, b = 1;
    least_squares(xs, ys, &a, &b);  // xs are distinct and >= 2, so this cannot fail
    double ss = 0;
    for (size_t i = 0; i < xs.size(); ++i) ss += (ys[i] - a - b * xs[i]) * (ys[i] - a - b * xs[i]);
    fit.intercept = a;
    fit.slope = b;
    fit.drift_ppm = (b - 1) * 1e6;
    fit.residual_rms = std::sqrt(ss / double(xs.size()));

    // Segment bounds: the largest, and the median weighted by how much guest time each covers.
    std::vector<std::pair<double, double>> seg;  // (bound, guest length)
    for (size_t i = 0; i + 1 < fit.points.size(); ++i)
        seg.push_back({segment_bound(fit.points[i], fit.points[i + 1]),
                       double(fit.points[i + 1].guest_tsc - fit.points[i].guest_tsc)});
    std::sort(seg.begin(), seg.end());
    double total_len = 0;
    for (auto& [bound, len] : seg) total_len += len, fit.bound_max = std::max(fit.bound_max, bound);
    double acc = 0;
    for (auto& [bound, len] : seg) {
        acc += len;
        if (acc >= total_len / 2) {
            fit.bound_median = bound;
            break;
        }
    }
    fit.ok = true;
    return fit;
}

HostTime map_guest(const ClockFit& fit, uint64_t guest_tsc) {
    const std::vector<ClockPoint>& p = fit.points;
    auto it = std::upper_bound(p.begin(), p.end(), guest_tsc,
                               [](uint64_t g, const ClockPoint& q) { return g < q.guest_tsc; });
    if (it == p.begin() || it == p.end()) {
        const ClockPoint& q = it == p.begin() ? p.front() : p.back();
        bool exact = q.guest_tsc == guest_tsc;
        return {guest_tsc + uint64_t(q.offset), exact ? q.half_width : std::numeric_limits<double>::infinity(), exact};
    }
    const ClockPoint& q = *it;
    const ClockPoint& r = *(it - 1);
    double t = double(guest_tsc - r.guest_tsc) / double(q.guest_tsc - r.guest_tsc);
    int64_t off = r.offset + int64_t(std::llround(t * double(q.offset - r.offset)));
    return {guest_tsc + uint64_t(off), segment_bound(r, q), true};
}

uint64_t guest_to_host(const ClockFit& fit, uint64_t guest_tsc) {
    return map_guest(fit, guest_tsc).host_tsc;
}

}  // namespace spinlab::collect
