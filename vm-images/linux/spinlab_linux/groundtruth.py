"""The ground truth of a gt run: the classes of the long waits on the module's lock against the
holder the module itself recorded, while the host froze that holder's vCPU.

A run (boot.run_guest with workload gt, the clock, the timeline and freeze) leaves in its
folder stream.bin (waits and the module's holds, guest TSC), clock.csv (the clock points),
timeline.csv and freezes.csv (host TSC). evaluate() puts them together:

  points    clock.read_points, every row checked; clock.fit_points (the narrowest point of
            each 50 ms among those with a bracket within max(1 ms, twice the 10th percentile));
            clockfit.fit -> the map guest TSC -> host TSC;
  timeline  timeline_input.read_timeline_csv (vCPUs placed by the run's vcpu_threads) with
            the freeze record's effective freeze windows added as off time;
  classes   attribution.attribute(run.waits, ncpus, map, timeline) (long waits: >= 2^20 cycles);
  truth     attribution.ground_truth_check(classes, holds, frozen, lock=the module's lock).

and judges the issue's bar with its premise stated (judge()): a run whose premise does not hold
on this host (too few waits behind a frozen holder, a recorder that lost events, a clock whose
bound is too wide for a freeze) is "not judged", with the figures, rather than failed.

A run folder written before issue 53 names the freezes by their old names: preempt.csv (old
name of freezes.csv) and summary.json config.preempt (old name of config.freeze); both are read
(freeze_record_path, freeze_config).
"""
from fractions import Fraction

from . import attribution, clock, clockfit, records
from . import timeline_input as ti

MIN_FROZEN_HOLDER_WAITS = 20   # fewer: the premise does not hold ("not judged")
# The freeze record in a run folder: freezes.csv, or preempt.csv (its old name, before issue 53).
FREEZE_RECORDS = ("freezes.csv", "preempt.csv")


def freeze_record_path(out_dir):
    """The run folder's freeze record (freezes.csv, else the old preempt.csv); None without one."""
    from pathlib import Path
    for name in FREEZE_RECORDS:
        if (Path(out_dir) / name).exists():
            return Path(out_dir) / name
    return None


def freeze_config(result):
    """summary.json's config.freeze ({"vcpus", "freeze_ms", "period_ms"}), or config.preempt, its
    old name; None when the run froze nothing."""
    config = result["config"]
    return config.get("freeze") or config.get("preempt")


def holds_tuples(run):
    return [(h.cpu, h.acquire, h.release) for h in run.holds]


def load(out_dir, result=None, run=None):
    """(result dict, records.GuestRun) of a run folder (summary.json and stream.bin)."""
    import json
    from pathlib import Path
    out_dir = Path(out_dir)
    if result is None:
        result = json.loads((out_dir / "summary.json").read_text())
    if run is None:
        run = records.parse((out_dir / "stream.bin").read_bytes())
    return result, run


def clock_map(out_dir, host_tsc_hz):
    """(ClockMap, all points, the points fitted) from the run's clock.csv."""
    from pathlib import Path
    points = clock.read_points(Path(out_dir) / "clock.csv")
    chosen = clock.fit_points(points, host_tsc_hz)
    return clockfit.fit(chosen), points, chosen


def _quantile(values, q):
    v = sorted(values)
    if not v:
        return None
    return v[min(len(v) - 1, max(0, int(q * len(v) + 0.999999) - 1))]


def evaluate(out_dir, result=None, run=None):
    """Everything the ground truth needs from a gt run folder; a dict (JSON-able) with the
    classes' summary, the ground-truth check, the clock's and the recorders' figures, and for a
    control (no freeze) the waits classed holder-preempted whose known holder ran."""
    from pathlib import Path
    out_dir = Path(out_dir)
    result, run = load(out_dir, result, run)
    if run.gt_lock is None:
        raise ValueError(f"{out_dir}: not a gt run (no HOLDS frames)")
    host = result.get("host") or {}
    hz = (host.get("clock") or {}).get("host_tsc_hz") or result["summary"]["tsc_hz_estimate"]
    cmap, points, chosen = clock_map(out_dir, hz)
    threads = result["vcpu_threads"]
    tl = ti.read_timeline_csv(out_dir / "timeline.csv", vcpu_threads=threads)
    frozen = {}
    record = freeze_record_path(out_dir)
    if record is not None:
        frozen = ti.read_freeze_record(record, vcpu_threads=threads)
        tl = tl.with_freezes(frozen)
    ncpus = run.meta["ncpus"]
    classed = attribution.attribute(run.waits, ncpus, cmap, tl)
    truth = attribution.ground_truth_check(classed, holds_tuples(run), frozen, lock=run.gt_lock)
    on_lock = [w for w in classed.waits if w.lock == run.gt_lock]
    by_index = {w.index: w for w in on_lock}
    # the clock's bound at the waits behind a frozen holder (host cycles, the worse end)
    bounds, fz_waits = [], []
    for d in truth["details"]:
        if d["frozen_share"] is not None and d["frozen_share"] > 0.5:
            w = by_index[d["index"]]
            fz_waits.append(w)
            bounds.append(max(w.bound_start, w.bound_end))
    # waits whose known holder ran (its vCPU surely on for more than half the mapped wait)
    ran_classes = {}
    for d in truth["details"]:
        w = by_index[d["index"]]
        if d["holder"] is None or w.host_start is None or w.host_end <= w.host_start:
            continue
        on = tl.on_set(d["holder"]).measure(w.host_start, w.host_end)
        if Fraction(on, w.host_end - w.host_start) > Fraction(1, 2):
            ran_classes[w.cls] = ran_classes.get(w.cls, 0) + 1
    # waits whose OWN vCPU was frozen for more than half the wait (lock-waiter preemption):
    # their class must not blame the holder where the holder ran
    fz_sets = {v: ti.freeze_set(w) for v, w in frozen.items()}
    waiter_frozen = {}
    for d in truth["details"]:
        w = by_index[d["index"]]
        if w.host_start is None or w.host_end <= w.host_start or w.cpu not in fz_sets:
            continue
        if Fraction(fz_sets[w.cpu].measure(w.host_start, w.host_end),
                    w.host_end - w.host_start) > Fraction(1, 2):
            ran = d["holder"] is not None and d["frozen_share"] is not None and \
                d["frozen_share"] <= 0.5
            key = "holder_not_frozen" if ran else "holder_frozen_or_unknown"
            waiter_frozen.setdefault(key, {}).setdefault(w.cls, 0)
            waiter_frozen[key][w.cls] += 1
    freeze_ms = (freeze_config(result) or {}).get("freeze_ms")
    holder_cpu = run.trailer["gt"]["holder_cpu"]
    held = []
    for h in run.holds:
        if h.holder and cmap.covers(h.acquire) and cmap.covers(h.release):
            held.append((cmap.to_host(h.acquire)[0], max(cmap.to_host(h.release)[0],
                                                          cmap.to_host(h.acquire)[0])))
    held = ti.IntervalSet(held, "a hold")
    caught = [(s0, e0) for s0, e0 in frozen.get(holder_cpu, [])
              if e0 != ti.END_OF_TIME and e0 > s0
              and Fraction(held.measure(s0, e0), e0 - s0) > Fraction(1, 2)]
    # of those, the ones that a long wait on the lock (on another CPU) spans for more than half
    waited = ti.IntervalSet([(w.host_start, w.host_end) for w in on_lock
                             if w.cpu != holder_cpu and w.host_start is not None
                             and w.host_end > w.host_start], "a wait")
    # ... counted where another vCPU ran for more than half the freeze (the timeline): its
    # thread then tried the lock; a waiter whose vCPU thread waited for a host CPU through the
    # whole freeze (a busy host) leaves no wait there
    others_on = [(s0, e0) for s0, e0 in caught if any(
        Fraction(tl.on_set(v).measure(s0, e0), e0 - s0) > Fraction(1, 2)
        for v in range(ncpus) if v != holder_cpu)]
    covered = sum(1 for s0, e0 in others_on
                  if Fraction(waited.measure(s0, e0), e0 - s0) > Fraction(1, 2))
    recorders = {k: v.get("returncode") for k, v in (host.get("recorders") or {}).items()}
    out = {
        "ncpus": ncpus,
        "holder_cpu": holder_cpu,
        "lock": f"{run.gt_lock:#x}",
        "mode": result["observed_lock_mode"],
        "seconds": result["config"]["seconds"],
        "freeze": freeze_config(result),
        "host_tsc_hz": hz,
        "holds": len(run.holds),
        "holder_holds": sum(1 for h in run.holds if h.holder),
        "waits_on_lock": sum(1 for w in run.waits if w.lock == run.gt_lock),
        "long_waits_on_lock": len(on_lock),
        "classes_on_lock": {c: sum(1 for w in on_lock if w.cls == c) for c in attribution.CLASSES},
        "classes_all_long_waits": classed.summary(),
        "ground_truth": {k: v for k, v in truth.items() if k != "details"},
        "known_holder_ran_classes": ran_classes,
        "frozen_waiter_classes": waiter_frozen,
        "clock": {"points": len(points), "fitted": len(chosen),
                  "report": cmap.report(),
                  "brackets": clock.bracket_stats(points, hz),
                  "bound_at_frozen_holder_waits_cycles": {
                      "median": _quantile(bounds, 0.5), "p90": _quantile(bounds, 0.9),
                      "max": max(bounds) if bounds else None}},
        "freezes": {str(v): len(w) for v, w in frozen.items()},
        # effective freezes of the holder's vCPU during which the holder held the lock for
        # more than half the freeze (the module's holds, mapped): each should leave a wait
        # behind a frozen holder on every other CPU; independent of the waits and the classes
        "freezes_on_holder": len(caught),
        # ... of those, the ones during which another vCPU ran for more than half the freeze,
        # and of these the ones a long wait on the lock spans for more than half
        "freezes_on_holder_others_on": len(others_on),
        "freezes_on_holder_waited": covered,
        "recorders": recorders,
        "freeze_ms": freeze_ms,
    }
    return out


def judge(ev, min_waits=MIN_FROZEN_HOLDER_WAITS):
    """(verdict, reasons): verdict 'pass', 'fail' or 'not judged'.

    A failure whatever the load: a freeze that caught the holder holding the lock
    (freezes_on_holder: from the module's holds and the freeze record alone) while another vCPU
    ran for more than half of it (freezes_on_holder_others_on: the timeline) stops that vCPU's
    thread on the lock, so a long wait on the lock spans it; fewer than half of those freezes
    spanned by a wait (freezes_on_holder_waited) means waits lost or misplaced.

    The premise, which this host's load can break ('not judged'): the recorders exited 0 (no
    lost trace events); at least min_waits freezes caught the holder, and at least min_waits
    waits were behind a frozen holder for more than half the wait (on a busy host a test-and-
    set waiter whose vCPU thread waits for a host CPU misses the holder's gaps, and its one wait
    then spans several holds and freezes, frozen for less than half); the clock's bound at
    those waits (90th percentile) within an eighth of a freeze (a bound b moves a share by at
    most 2b over a freeze-length wait, so 'frozen for more than half' holds while b < freeze /
    4; an eighth leaves room). Then the issue's bar (ground_truth_check's meets_bar): 2 vCPUs
    >= 95 % holder-preempted, more >= 95 % holder-preempted or possibly-preempted, none
    holder-ran."""
    g = ev["ground_truth"]
    reasons = []
    bad = {k: v for k, v in ev["recorders"].items() if v != 0}
    if bad:
        reasons.append(f"a host recorder did not exit cleanly (lost events?): {bad}")
    f, fo, fw = (ev["freezes_on_holder"], ev["freezes_on_holder_others_on"],
                 ev["freezes_on_holder_waited"])
    if not bad and fo >= min_waits and fw < fo / 2:
        return "fail", [f"{fo} freezes caught the holder holding the lock while another vCPU "
                        f"ran, but only {fw} of them were spanned by a long wait on the lock: "
                        f"waits lost or misplaced"]
    if f < min_waits:
        reasons.append(f"{f} effective freezes caught the holder holding the lock, fewer than "
                       f"{min_waits}")
    if g["frozen_holder_waits"] < min_waits:
        reasons.append(f"{g['frozen_holder_waits']} waits behind a frozen holder, fewer than "
                       f"{min_waits}")
    p90 = ev["clock"]["bound_at_frozen_holder_waits_cycles"]["p90"]
    if ev["freeze_ms"] and p90 is not None:
        limit = ev["freeze_ms"] * 1e-3 * ev["host_tsc_hz"] / 8
        if p90 > limit:
            reasons.append(f"the clock's bound at those waits (p90 {p90 / ev['host_tsc_hz'] * 1e3:.2f}"
                           f" ms) exceeds an eighth of the freeze ({ev['freeze_ms'] / 8:g} ms)")
    if reasons:
        return "not judged", reasons
    return ("pass" if g["meets_bar"] else "fail"), [g["bar"]]


def judge_control(ev, min_ran=100, min_frozen_waiter=20):
    """(verdict, reasons) of a control run: the holder's vCPU never frozen, the waiter's (vCPU
    0) frozen instead. Few or no waits behind a frozen holder (the frozen vCPU holds the lock
    only for its tiny holds): at most max(5, a tenth of the freezes); none of the waits whose
    known holder ran (its vCPU on for more than half the wait) classed holder-preempted; and of
    the waits whose own vCPU was frozen for more than half (the freeze record, independent of
    the timeline) and whose holder was not, at least half holder-ran: a class that took the
    waiter's own off time for the holder's would call them all holder-preempted. Not all of
    them: while one vCPU thread is frozen QEMU can stall the other (it sleeps, state S), and
    the holder is then off indeed. Not judged: a recorder that did not exit 0, fewer than
    min_ran waits whose holder ran or min_frozen_waiter of a frozen waiter."""
    g = ev["ground_truth"]
    ran = ev["known_holder_ran_classes"]
    fw = ev["frozen_waiter_classes"].get("holder_not_frozen", {})
    bad = {k: v for k, v in ev["recorders"].items() if v != 0}
    reasons = []
    if bad:
        reasons.append(f"a host recorder did not exit cleanly (lost events?): {bad}")
    if sum(ran.values()) < min_ran:
        reasons.append(f"{sum(ran.values())} long waits whose known holder ran, fewer than "
                       f"{min_ran}")
    if sum(fw.values()) < min_frozen_waiter:
        reasons.append(f"{sum(fw.values())} waits of a frozen waiter whose holder was not "
                       f"frozen, fewer than {min_frozen_waiter}")
    if reasons:
        return "not judged", reasons
    nfreezes = sum(ev["freezes"].values())
    fails = []
    if g["frozen_holder_waits"] > max(5, 0.1 * nfreezes):
        fails.append(f"{g['frozen_holder_waits']} waits behind a frozen holder, more than "
                     f"max(5, a tenth of {nfreezes} freezes)")
    if ran.get(attribution.HOLDER_PREEMPTED, 0):
        fails.append(f"{ran[attribution.HOLDER_PREEMPTED]} waits whose known holder ran classed "
                     f"holder-preempted")
    if fw.get(attribution.HOLDER_RAN, 0) < 0.5 * sum(fw.values()):
        fails.append(f"of {sum(fw.values())} waits of a frozen waiter, only "
                     f"{fw.get(attribution.HOLDER_RAN, 0)} holder-ran")
    if fails:
        return "fail", fails
    return "pass", ["few or no waits behind a frozen holder; none whose holder ran classed "
                    "holder-preempted; the frozen waiter's waits mostly holder-ran"]


def is_control(ev):
    """A run whose freezes never touched the module's holder CPU."""
    fz = ev.get("freeze") or {}
    return bool(fz) and ev["holder_cpu"] not in fz.get("vcpus", [])


def report_lines(ev, verdict=None, reasons=()):
    """Human-readable lines: the figures the issue asks for."""
    g = ev["ground_truth"]
    hz = ev["host_tsc_hz"]
    c = ev["clock"]
    fr = g["fractions"]

    def pct(x):
        return "-" if x is None else f"{100 * x:.1f} %"

    b = c["bound_at_frozen_holder_waits_cycles"]
    lines = [
        f"ground truth, {ev['ncpus']} vCPUs, lock mode {ev['mode']}, {ev['seconds']:g} s, "
        f"freeze {ev['freeze']}: {ev['holds']} holds ({ev['holder_holds']} by the holder), "
        f"{ev['waits_on_lock']} waits on the lock, {ev['long_waits_on_lock']} long",
        f"  waits behind a frozen holder (> half the wait): {g['frozen_holder_waits']}; classed "
        + ", ".join(f"{k} {v} ({pct(fr[k])})" for k, v in g["counts"].items() if v)
        + f"; no known holder {g['no_known_holder']}, unmapped {g['unmapped']}",
        f"  possibly-preempted waits: {g['possibly_preempted']}, of which the holder in fact ran "
        f"(frozen <= half): {g['possibly_preempted_holder_ran']}",
        f"  waits whose known holder ran (on > half): classed {ev['known_holder_ran_classes']}",
        f"  waits whose own vCPU was frozen (> half): classed {ev['frozen_waiter_classes']}",
        f"  clock: {c['points']} points, {c['fitted']} fitted; "
        f"brackets median {c['brackets']['median'] / hz * 1e6:.0f} us, p99 "
        f"{c['brackets']['p99'] / hz * 1e6:.0f} us; bound at those waits median "
        + (f"{b['median'] / hz * 1e6:.0f} us, p90 {b['p90'] / hz * 1e6:.0f} us"
           if b["median"] is not None else "-")
        + f"; offset slope {c['report']['offset_slope_ppm']:.1f} ppm",
        f"  freezes {ev['freezes']}, {ev['freezes_on_holder']} of them caught the holder holding "
        f"the lock, {ev['freezes_on_holder_others_on']} of those while another vCPU ran, "
        f"{ev['freezes_on_holder_waited']} of these spanned by a long wait; recorders "
        f"{ev['recorders']}",
    ]
    if verdict:
        lines.append(f"  verdict: {verdict.upper()}: " + "; ".join(reasons))
    return lines
