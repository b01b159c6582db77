// collector/clock_sync.h: guest-TSC to host-TSC correlation with a stated error bound.
//
// The guest publishes its TSC in the shared region's ClockArea (spinlab/shm.h) on CPU 0's
// tick. The host polls it, reading its own TSC around every poll, so each publication is
// bracketed: it became visible after host_before and before host_after. Causality makes the
// bracket one-sided: the guest read its TSC before the publication became visible, so
//     host time of guest_tsc <= host_after                 always;
//     host time of guest_tsc >= host_before                unless the publishing vCPU was
//                                                          held up between rdtsc and store.
// A sample therefore pins the offset (host - guest) into [host_before - guest, host_after -
// guest], except a late publication, whose offset is too large.
//
// Why not one straight line: under QEMU TCG with several vCPUs reading the TSC, the guest TSC
// is the host TSC plus an offset that QEMU raises in steps (its guard that keeps the guest
// TSC monotonic across vCPU threads adds to the offset whenever a host TSC read comes out
// lower than an earlier one). Measured here: steps of 0.4 to 1.6 M cycles every few seconds
// with lockbench on 2 vCPUs, none with 1 vCPU or an idle guest. A single fitted line is
// wrong by those steps; so the mapping is piecewise linear between narrow samples taken
// throughout the run, and every mapped time carries the bound of its segment.
//
// Method "bracket-envelope":
//   1. drop samples whose bracket runs backwards ("unordered") or is wider than max_bracket
//      ("wide": the host poller was descheduled, the midpoint says little);
//   2. drop late publications ("late"): a sample whose lower offset bound lies above the
//      upper bounds of both neighbours (a step of the offset moves the level for good; a
//      late publication is one isolated spike upwards);
//   3. each remaining sample is a point (guest_tsc, offset = bracket middle - guest_tsc,
//      half_width = half the bracket + the noise floor); between two points the offset lay
//      within [lo, hi] = the union of the two points' ranges offset +- half_width, whenever
//      it moved monotonically between them (a step, a creep or a drift), so a time there maps
//      with the middle of that range and the bound (hi - lo) / 2: about half the offset's move
//      plus the half widths. A linear interpolation would be off by the whole move near one
//      end when a step came near the other. Outside the first and last point there is no bound.
// The noise floor is the largest rise of the offset over a segment beyond its brackets: the
// offset never rises (QEMU's guard only lowers it), so a rise is error the brackets do not
// show (a publication a little late, host CPUs whose TSCs disagree), and every point carries it.
// The straight-line summary is for reporting; mapping uses the points. Its slope is the rate
// at which the two TSCs run apart, steps aside: the pooled rate of the segments whose offset
// change agrees with one rate to within their half widths and noise floor. Under load QEMU's
// guard lowers the offset in small steps through nearly every segment (a creep, -4 to -155 ppm
// from segment to segment, which over one segment looks like a rate), so the rate counts as
// measured only when the agreeing segments cover most of the run (drift_coverage >= 2/3);
// otherwise drift_measured is false, slope 1, and drift_note says why. Its bound counts bracket
// noise and any move the agreement test cannot see. offset_steps adds up the steps.
// Pure: tested on synthetic data.
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

// One kept sample: host = guest_tsc + offset, to within half_width.
struct ClockPoint {
    uint64_t guest_tsc;
    int64_t offset;     // host - guest at the bracket's middle
    double half_width;  // host cycles
};

struct ClockFit {
    bool ok = false;
    std::string error;  // why there is no fit (too few samples, no spread)
    std::string method = "bracket-envelope";
    uint64_t guest_ref = 0;  // reference points (the first kept sample), so the doubles below
    uint64_t host_ref = 0;   // only carry differences and keep their precision
    uint64_t host_tsc_hz = 0;  // the rate of the host TSC the points map to (0: not stated).
                               // Not the guest's: host times go on an axis at this rate.
    double intercept = 0;    // straight-line summary: host cycles at guest_ref, minus host_ref
    double slope = 1;        // host cycles per guest cycle (the rate, steps aside)
    double drift_ppm = 0;    // (slope - 1) * 1e6: how fast the TSCs run apart, steps aside
    bool drift_measured = false;  // false: see drift_note; drift_ppm is then 0
    double drift_bound_ppm = 0;   // |drift_ppm - true drift| <= this: bracket noise, and steps too small to see
    size_t drift_segments = 0;    // step-free segments the drift was taken from (0: not measured)
    double drift_coverage = 0;    // their share of the kept span (at least 2/3 to be measured)
    std::string drift_note;       // why the drift is not measured ("" when it is)
    double noise_floor = 0;       // host cycles added to every point's half width (see above)
    double residual_rms = 0; // of the points about the straight line, host cycles
    double offset_steps = 0; // total offset change beyond brackets and drift (QEMU's steps)
    double max_width = 0;    // widest bracket kept, host cycles
    uint64_t max_bracket = 0;  // the limit applied (wider brackets were rejected)
    std::vector<ClockPoint> points;  // sorted by guest_tsc
    double bound_max = 0;     // largest segment bound (host cycles) between first and last point
    double bound_median = 0;  // median segment bound, weighted by the segment's guest length
    size_t used = 0;          // points kept
    size_t total = 0;
    size_t rejected_unordered = 0;
    size_t rejected_wide = 0;
    size_t rejected_late = 0;

    // host_tsc - guest_tsc at guest_ref (the "offset" people quote)
    double offset_at_ref() const {
        return double(host_ref) - double(guest_ref) + intercept;
    }
};

// Brackets wider than this are dropped: 16384 cycles is 6.3 us at 2.6 GHz, so a kept point
// is good to 3.2 us on its own. With fewer than 2 such samples, the limit is raised 8x at a
// time (up to 4096x, ~26 ms at 2.6 GHz) until 2 remain; fit.max_bracket says which applied.
constexpr uint64_t kMaxClockBracket = 16384;

ClockFit fit_clock(std::span<const ClockSample> samples, uint64_t max_bracket = kMaxClockBracket);

// A guest time mapped to the host: host_tsc within +-bound host cycles. inside is false when
// guest_tsc lies outside the sampled span (mapped with the nearest point, bound infinite).
struct HostTime {
    uint64_t host_tsc;
    double bound;
    bool inside;
};
HostTime map_guest(const ClockFit& fit, uint64_t guest_tsc);

// map_guest(...).host_tsc (fit.ok must be true).
uint64_t guest_to_host(const ClockFit& fit, uint64_t guest_tsc);

}  // namespace spinlab::collect
