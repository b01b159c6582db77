// collector/clock_sync.cc: see clock_sync.h.
#include "clock_sync.h"

#include <algorithm>
#include <cmath>

namespace spinlab::collect {
namespace {

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
}

struct Point {
    double x;  // guest - guest_ref
    double y;  // host midpoint - host_ref
    double width;
};

// A midpoint's error is up to half its bracket, so a sample counts with weight 1/width^2
// (widths floored at kMinWidth cycles, so an exact bracket does not take all the weight).
constexpr double kMinWidth = 64;

double weight(const Point& p) {
    double w = std::max(p.width, kMinWidth);
    return 1.0 / (w * w);
}

// Weighted least squares y = a + b x; false when the x values have no spread.
bool least_squares(const std::vector<Point>& pts, double* a, double* b) {
    if (pts.size() < 2) return false;
    double sw = 0, sx = 0, sy = 0;
    for (const Point& p : pts) {
        double w = weight(p);
        sw += w, sx += w * p.x, sy += w * p.y;
    }
    double mx = sx / sw, my = sy / sw, sxx = 0, sxy = 0;
    for (const Point& p : pts) {
        double w = weight(p);
        sxx += w * (p.x - mx) * (p.x - mx);
        sxy += w * (p.x - mx) * (p.y - my);
    }
    if (!(sxx > 0)) return false;
    *b = sxy / sxx;
    *a = my - *b * mx;
    return true;
}

}  // namespace

ClockFit fit_clock(std::span<const ClockSample> samples) {
    ClockFit fit;
    fit.total = samples.size();
    std::vector<const ClockSample*> valid;
    for (const ClockSample& s : samples)
        if (s.host_after >= s.host_before) valid.push_back(&s);
    if (valid.size() < 2) {
        fit.error = "need at least 2 clock samples with ordered host brackets, have " +
                    std::to_string(valid.size());
        return fit;
    }
    fit.guest_ref = valid.front()->guest_tsc;
    fit.host_ref = valid.front()->host_before;

    std::vector<double> widths;
    for (const ClockSample* s : valid) widths.push_back(double(s->host_after - s->host_before));
    double med_width = median(widths);
    std::vector<Point> pts;
    for (const ClockSample* s : valid) {
        double width = double(s->host_after - s->host_before);
        if (width > 4 * med_width && width > 0) continue;
        // Differences as signed 64-bit first: exact, then converted once.
        double x = double(int64_t(s->guest_tsc - fit.guest_ref));
        double y = double(int64_t(s->host_before - fit.host_ref)) + width / 2;
        pts.push_back({x, y, width});
    }

    double a = 0, b = 1;
    if (!least_squares(pts, &a, &b)) {
        fit.error = "clock samples have no spread in guest TSC (did the guest publish?)";
        return fit;
    }
    std::vector<double> res;
    for (const Point& p : pts) res.push_back(std::fabs(p.y - (a + b * p.x)));
    // Residuals inside a sample's own bracket are expected; beyond it and beyond 4x the
    // median residual the sample is an outlier (a publisher preempted between rdtsc and store).
    double limit = std::max(4 * median(res), med_width / 2);
    std::vector<Point> kept;
    for (const Point& p : pts)
        if (std::fabs(p.y - (a + b * p.x)) <= limit) kept.push_back(p);
    if (kept.size() >= 2 && kept.size() < pts.size()) {
        double a2, b2;
        if (least_squares(kept, &a2, &b2)) {
            a = a2, b = b2;
            pts = kept;
        }
    }

    double ss = 0;
    for (const Point& p : pts) {
        double r = p.y - (a + b * p.x);
        ss += r * r;
        fit.max_width = std::max(fit.max_width, p.width);
    }
    fit.ok = true;
    fit.intercept = a;
    fit.slope = b;
    fit.drift_ppm = (b - 1) * 1e6;
    fit.residual_rms = std::sqrt(ss / double(pts.size()));
    fit.used = pts.size();
    return fit;
}

uint64_t guest_to_host(const ClockFit& fit, uint64_t guest_tsc) {
    double dx = double(int64_t(guest_tsc - fit.guest_ref));
    double dy = fit.intercept + fit.slope * dx;
    return fit.host_ref + uint64_t(int64_t(std::llround(dy)));
}

}  // namespace spinlab::collect
