// collector/clock_sync.h: guest-TSC to host-TSC correlation.
//
// The guest publishes its TSC in the shared region's ClockArea (spinlab/shm.h). The host polls
// it, reading its own TSC around every poll, so each publication is bracketed: it became
// visible after the last poll that still saw the previous one and before the poll that saw it.
// A sample is (guest_tsc, [host_before, host_after]); the model is
//     host_tsc = host_ref + slope * (guest_tsc - guest_ref) + intercept
// fitted by weighted least squares on the bracket midpoints. Pure: tested on synthetic data.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace spinlab::collect {

struct ClockSample {
    uint64_t guest_tsc;
    uint64_t host_before;  // host TSC before the poll that was still stale
    uint64_t host_after;   // host TSC after the poll that saw guest_tsc
};

struct ClockFit {
    bool ok = false;
    std::string error;       // why there is no fit (too few samples, no spread)
    uint64_t guest_ref = 0;  // reference points (the first usable sample), so the doubles below
    uint64_t host_ref = 0;   // only carry differences and keep their precision
    double intercept = 0;    // host cycles at guest_ref, relative to host_ref
    double slope = 1;        // host cycles per guest cycle
    double drift_ppm = 0;    // (slope - 1) * 1e6: how fast the two TSCs run apart
    double residual_rms = 0; // host cycles
    double max_width = 0;    // widest bracket kept, host cycles (the accuracy bound)
    size_t used = 0;         // samples kept after rejecting wide brackets and outliers
    size_t total = 0;

    // host_tsc - guest_tsc at guest_ref (the "offset" people quote)
    double offset_at_ref() const {
        return double(host_ref) - double(guest_ref) + intercept;
    }
};

// Weighted least squares over the samples, each weighted by 1/width^2 of its bracket (a
// midpoint is only known to within half its bracket). Samples whose bracket is wider than 4x
// the median width are dropped first (a preempted host poller), then, after a first fit,
// samples whose residual exceeds max(4x the median absolute residual, half the median width)
// are dropped and the fit repeated. At least 2 samples with distinct guest TSCs must remain.
ClockFit fit_clock(std::span<const ClockSample> samples);

// Maps a guest TSC value to the host TSC with a fit (ok must be true).
uint64_t guest_to_host(const ClockFit& fit, uint64_t guest_tsc);

}  // namespace spinlab::collect
