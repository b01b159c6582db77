// collector/clock_fit_json.cc: see clock_fit_json.h.
#include "clock_fit_json.h"

#include <cmath>

#include "hostlib/results_contract.h"

namespace spinlab::collect {

namespace key = spinlab::results::key;

void write_clock_fit(JsonWriter& w, const ClockFit& fit) {
    w.field(key::method, fit.method);
    w.field(key::offset_cycles, int64_t(std::llround(fit.offset_at_ref())));
    // The host side's TSC rate (meta.json's host.tsc_hz): host times go on an axis at this rate.
    if (fit.host_tsc_hz) w.field(key::host_tsc_hz, fit.host_tsc_hz);
    w.field(key::drift_ppm, fit.drift_ppm);
    // The drift is taken from step-free segments only; with fewer than two it is not measured
    // (drift_ppm 0 is then the straight line's assumption, not a measurement).
    w.field(key::drift_measured, fit.drift_measured);
    if (fit.drift_measured) w.field(key::drift_bound_ppm, fit.drift_bound_ppm);
    else w.field(key::drift_note, fit.drift_note);
    w.field(key::drift_segments, uint64_t(fit.drift_segments));
    w.field(key::drift_coverage, fit.drift_coverage);
    // Added to every point's half width: error of the points that their brackets do not show.
    w.field(key::noise_floor_cycles, fit.noise_floor);
    w.field(key::ref_guest_tsc, fit.guest_ref);
    w.field(key::offset_steps_cycles, fit.offset_steps);
    w.field(key::bound_max_cycles, fit.bound_max);
    w.field(key::bound_median_cycles, fit.bound_median);
    w.field(key::samples, uint64_t(fit.used));
    w.field(key::samples_taken, uint64_t(fit.total));
    w.key(key::rejected).begin_object();
    w.field(key::unordered, uint64_t(fit.rejected_unordered));
    w.field(key::wide, uint64_t(fit.rejected_wide));
    w.field(key::late, uint64_t(fit.rejected_late));
    w.end_object();
    w.field(key::residual_cycles, fit.residual_rms);
    w.field(key::max_bracket_cycles, fit.max_width);
    w.field(key::bracket_limit_cycles, fit.max_bracket);
    // The piecewise mapping itself: [guest_tsc, host - guest, half width] per kept sample (half
    // the bracket plus noise_floor_cycles).
    w.key(key::points).begin_array();
    for (const ClockPoint& p : fit.points) w.begin_array().value(p.guest_tsc).value(p.offset).value(p.half_width).end_array();
    w.end_array();
}

}  // namespace spinlab::collect
