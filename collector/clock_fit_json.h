// collector/clock_fit_json.h: the one JSON shape of a clock fit (clock_sync.h's ClockFit), for
// both places that store one: the runner's clock.json (analysis/README.md, "clock.json"; read
// back by read_clock_json for `trace export --clock` and by the report's lhp.ClockMap) and the
// `end` line of a `spinlab-collect record` file (its "clock_fit" object, after "ok").
//
// The members, written into the object the caller has open (the fit must be ok):
//   method, offset_cycles, host_tsc_hz (only when stated), drift_ppm, drift_measured,
//   drift_bound_ppm (measured) or drift_note (not), drift_segments, drift_coverage,
//   noise_floor_cycles, ref_guest_tsc, offset_steps_cycles, bound_max_cycles,
//   bound_median_cycles, samples, samples_taken, rejected {unordered, wide, late},
//   residual_cycles, max_bracket_cycles, bracket_limit_cycles,
//   points [[guest_tsc, host - guest, half width], ...]
#pragma once

#include "clock_sync.h"
#include "hostlib/json_writer.h"

namespace spinlab::collect {

void write_clock_fit(JsonWriter& w, const ClockFit& fit);

}  // namespace spinlab::collect
