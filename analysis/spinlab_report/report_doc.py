"""The report as a list of blocks, read top to bottom; render_md and render_html write it out.

Order: the verdict (a paragraph, its warnings and its table), what is missing, the tail (CCDF beside
the CDF the original experiment drew), key figures, long waits and LHP, the log2 wait table,
throughput, lock classes, CPUs, hold times, how the numbers were computed, and last the run's
settings. Blocks are tuples: ("h1"|"h2"|"p"|"lead"|"warning", text), ("list", [text]), ("table",
header, rows), ("pre", text), ("figure", Figure), ("figures", [Figure, ...]) side by side.
"""
import math

from . import kvm_clock, throughput, verdict
from .contract import K

# The run's settings the report lists, as (reader.Meta's attribute, label), in order.
META_FIELDS = [(K.run_id, "run"), (K.date, "date"), (K.git_rev, "git revision"), (K.accelerator, "accelerator"),
               (K.backend, "backend"), (K.vcpus, "vCPUs"), (K.memory_mb, "memory (MiB)"), (K.lock, "lock algorithm"),
               (K.pause, "pause in spin loops"), (K.clock, "clock source"), (K.pinning, "pinning"),
               (K.guest_tsc_hz, "guest TSC (Hz)"), (K.workload, "workload"), (K.qemu_version, "QEMU"),
               (K.libvirt_version, "libvirt"), (K.repetitions, "repetitions")]


def cycles(x) -> str:
    return "—" if x is None else f"{x:,.0f} (2^{math.log2(max(x, 1)):.1f})"


def pct(x, nd=2) -> str:
    return "—" if x is None else f"{100.0 * x:.{nd}f}%"


def num(x, nd=1) -> str:
    return "—" if x is None else f"{x:,.{nd}f}"


def freeze_priority(p) -> str | None:
    """How the freeze injector was scheduled (p: the run's meta.freeze_rt_priority, a
    reader.FreezePriority or None): None when no freeze phase started it (`used` null)."""
    if p is None or p.used is None:
        return None
    text = f"SCHED_FIFO {p.used}" if p.used else "normal priority"
    if p.fallback:
        text += f" (asked SCHED_FIFO {p.asked}: {p.fallback})"
    return text


def meta_rows(meta) -> list:
    """The run's settings (meta: its reader.Meta): the META_FIELDS recorded, every field of the
    host as recorded, the phases and the freeze injector's priority."""
    rows = [[label, str(getattr(meta, k))] for k, label in META_FIELDS if getattr(meta, k) not in (None, "")]
    rows += [[f"host {k.replace('_', ' ')}", str(v)] for k, v in meta.host.recorded.items()]
    rows.append(["phases", ", ".join(meta.phases)])
    priority = freeze_priority(meta.freeze_rt_priority)
    if priority:
        rows.append(["freeze injector", priority])
    return rows


def key_rows(summary: dict) -> list:
    out = []
    for phase, s in summary["phases"].items():
        if s["status"] == "missing":
            out.append([phase, "missing"] + ["—"] * 7)
            continue
        t, l = s["throughput"], s["lhp"]
        out.append([phase, str(s["acquisitions"]), pct(s["contended_share"]), cycles(s["wait_p50_cycles"]),
                    cycles(s["wait_p99_cycles"]), cycles(s["wait_p999_cycles"]), pct(s["share_waits_ge_2^20"], 3),
                    f"{pct(l['share'], 1)} of {l['holder_off'] + l['holder_on']}", num(t["mean"])])
    return out


def context_line(run, summary: dict) -> str:
    m = run.meta
    bits = [f"run {run.run_id}", summary["state"]]
    bits += [f"{m.vcpus} vCPUs" if m.vcpus else None, f"lock {m.lock}" if m.lock else None,
             (m.accelerator or "").upper() or None,
             f"{m.repetitions} repetitions per phase ({', '.join(m.phases)})"]
    return "; ".join(b for b in bits if b) + ". The run's settings are at the end."


def document(run, summary: dict, table_text: str, classes: dict, figs: dict, sections: list, opts) -> list:
    """The report's blocks (render_md, render_html): the verdict, what is missing, the tail, the
    long waits, the log2 wait table, throughput, lock classes (classes: aggregate.Counters.classes),
    CPUs, holds, the method; sections
    (blocks made elsewhere: KVM's counters, the timing=all table, the traces) before the run's
    settings, which close it."""
    v = summary["verdict"]
    head, rows = verdict.table(v)
    doc = [("h1", f"spinlab report: {run.run_id}"), ("lead", verdict.headlines(v))]
    doc += [("warning", w) for w in v.get("warnings", [])]
    doc += [("table", head, rows)]
    details = verdict.details(v)
    if details:
        doc.append(("list", details))
    doc.append(("p", context_line(run, summary)))
    problems = summary["problems"]
    if problems:
        doc += [("h2", "What is missing"),
                ("p", f"Run state: {summary['state']}. Read the figures below with these gaps in mind:"),
                ("list", problems)]
    doc += [("h2", "The tail: how long contended waits last"), ("figures", [figs["wait_ccdf"], figs["wait_cdf"]]),
            ("figure", figs["wait_cdf_phases"]),
            ("table", ["phase", "acquisitions", "contended", "p50 wait", "p99 wait", "p99.9 wait",
                       "waits \u2265 2^20", f"LHP share (\u2265 {opts.long_wait_threshold})", throughput_metric(summary)],
             key_rows(summary)),
            ("p", "Wait percentiles are in TSC cycles over timed contended waits.")]
    doc += lhp_section(summary, figs, opts, run.meta.host.tsc_hz)
    doc += [("h2", "The log2 wait table"), ("pre", table_text), ("figure", figs["wait_hist"])]
    doc += throughput_section(summary, figs)
    doc += every_vm_section(run)
    doc += [("h2", "Lock classes")]
    for phase in run.phases:
        rows = classes[phase]
        if rows:
            doc.append(("table", [f"{phase}: class", "acquisitions", "contended", "p50 wait", "p99 wait", "max wait"],
                        [[r["class"], str(r["acquisitions"]), pct(r["contended_share"]), cycles(r["p50"]),
                          cycles(r["p99"]), cycles(r["max"])] for r in rows]))
        else:
            doc.append(("p", f"{phase}: no lock classes (phase missing or empty)."))
    doc += [("figure", figs["class_waits"]), ("h2", "CPUs"), ("figure", figs["cpu_heatmap"]),
            ("h2", "Hold times"), ("figure", figs["hold_cdf"])]
    doc += method_section(opts, v)
    doc += sections
    doc += [("h2", "The run"), ("table", ["setting", "value"], meta_rows(run.meta))]
    if not problems:
        doc.append(("p", f"Nothing is missing: the run is {summary['state']}, every phase has all "
                         f"{run.meta.repetitions} repetitions and every histogram has data."))
    return doc


def outside_text(summary: dict) -> str:
    """The listed waits that ended outside their repetition (the trace session stops a little
    after the end snapshot), which the counters and the verdict do not take."""
    n = {p: s["lhp"].get("outside_repetition", 0) for p, s in summary["phases"].items()
         if s["status"] != "missing" and s.get("lhp")}
    if not any(n.values()):
        return ""
    parts = ", ".join(f"{k} in {p}" for p, k in n.items() if k)
    return (f" The table counts every listed wait; of them, {parts} ended after their repetition's end "
            "snapshot (the trace session stops a little later), where the counters and the verdict do not "
            "take them.")


def lhp_section(summary: dict, figs: dict, opts, host_hz=None) -> list:
    rows, frac_rows = [], []
    edges = None
    for phase, s in summary["phases"].items():
        if s["status"] == "missing":
            rows.append([phase, "missing", "—", "—", "—", "—", "—", "—"])
            continue
        l = s["lhp"]
        rows.append([phase, str(l["long_waits"]), lost_text(l, s.get("trace")), str(l["holder_off"]), str(l["holder_on"]),
                     str(l["uncertain"]), str(l["unknown"]),
                     f"{pct(l['share'], 1)} (steal {l['from_guest']}, timeline {l['from_timeline']})"])
        ft = l.get("holder_off_fraction") or {}
        edges = ft.get("fraction_edges", edges)
        for octave, counts in ft.get("by_wait_octave", {}).items():
            frac_rows.append([phase, octave] + [str(c) for c in counts])
    t = l_thresholds(summary)
    out = [("h2", "Long waits and lock-holder preemption"),
           ("p", f"A long wait is one of at least {opts.long_wait_threshold} cycles. Each side of it (the holder's, the "
                 "waiter's) is placed by the host timeline where the timeline covers it, through the clock "
                 "correlation: the cycles of the wait during which that vCPU was off-CPU (a holder's only while it "
                 "held the lock), as a range over the clock's error bound. Holder off-CPU means off for at least "
                 f"{t[0]:.0%} of the wait (waiter: {t[1]:.0%}); a side whose range straddles its threshold is "
                 "uncertain. Where the timeline does not cover a side, the guest's steal time can only say it was "
                 "off (steal time does not see a frozen, sleeping or blocked vCPU thread); else the side is "
                 "unknown. The share is over waits whose holder side is known and certain (the uncertain column "
                 "counts those whose holder side straddles its threshold); the LHP share column says which source "
                 "decided the holder side (steal, timeline). " + halts_text(summary)),
           *clock_paragraph(summary, host_hz),
           ("p", "Lost: long waits missing from the list, from the trace sessions' exact loss counters "
                 "(EventsLost; buffers lost whole are named in the problems above)."
                 + outside_text(summary)),
           ("table", ["phase", "long waits", "lost", "holder off-CPU", "holder running", "uncertain", "unknown",
                      "LHP share"], rows)]
    if frac_rows and edges:
        bins = [f"{int(a * 100)}–{int(b * 100)}%" for a, b in zip(edges[:-1], edges[1:])]
        out += [("p", "Holder off-CPU fraction of the wait against wait length (timeline-measured waits; "
                      "the middle of each wait's range):"),
                ("table", ["phase", "wait ≥"] + bins, frac_rows)]
    out += agreement_tables(summary)
    return out + [("figure", figs["holder_off_scatter"]), ("figure", figs["long_wait_window"])]


def halts_text(summary: dict) -> str:
    """Whether a vCPU asleep was told halted (the guest's record, halts.csv) from blocked."""
    recorded = any(((p.get("lhp") or {}).get("off_cycles") or {}).get("holder", {}).get("halted") is not None
                   for p in summary["phases"].values())
    if recorded:
        return ("Time a vCPU's guest had halted (idle, or a waiter halted for its kick), which the guest records "
                "(halts.csv), counts as neither off nor on; its edges are placed with the clock's bound, and time "
                "whose record was lost counts as possibly halted.")
    return ("This guest records no halts, so a vCPU asleep because its guest halted counts as off (blocked), as "
            "a vCPU thread blocked inside the hypervisor does.")


def clock_paragraph(summary: dict, host_hz) -> list:
    """Which clock placed guest times on the host's axis: under KVM KVM's offset or why not
    (kvm_text), else the sampled fit and what its reference clock placed (reference_text); none
    without a clock."""
    c = summary.get("clock") or {}
    hz = float(host_hz) if host_hz else None
    t = kvm_text(c.get("kvm_tsc"), c, hz) or reference_text(c, hz)
    return [("p", t)] if t else []


def kvm_text(info: dict | None, fit: dict | None, hz: float | None) -> str | None:
    """Under KVM (info: summary.json's clock.kvm_tsc, what kvm_clock.decide decided): which clock
    placed guest times on the host's axis, and why; None without KVM statistics."""
    if info is None:
        return None
    us = (lambda c: f"{c / hz * 1e6:.1f} µs") if hz else (lambda c: f"{c:.0f} cycles")
    if info["source"] == kvm_clock.METHOD:
        return (f"Clock: KVM's TSC offset ({info['tsc_offset']} cycles, the same on {info['vcpus']} vCPUs in all "
                f"{info['samples_read']} reads at the repetitions' starts and ends; debugfs), so guest times lie on "
                f"the host's axis exactly (bound 0). The sampled fit, its check, allows it with "
                f"{us(info['margin_cycles'])} to spare; the fit put the offset at {info['fit_offset_cycles']} cycles, "
                f"its publications late by at least {us(info['fit_late_cycles'])}.")
    bound = (fit or {}).get("bound_median_cycles")
    return (f"Clock: the sampled fit (bound median {us(bound) if bound is not None else 'not stated'}); KVM's TSC "
            f"offset was not taken: {info['why']}.")


def reference_text(c: dict, hz: float | None) -> str | None:
    """The sampled fit's paragraph: its bound, and the publications its reference clock placed."""
    ref = c.get("reference")
    if not c or ref is None:
        return None
    us = (lambda v: f"{v / hz * 1e6:.1f} µs") if hz else (lambda v: f"{v:.0f} cycles")
    bound = c.get("bound_median_cycles")
    head = (f"Clock: the sampled fit (bound median {us(bound) if bound is not None else 'not stated'}, "
            f"max {us(c['bound_max_cycles']) if c.get('bound_max_cycles') is not None else 'not stated'}). ")
    if ref["source"] == "none":
        return head + "The guest's publications carried no reference clock: each point is a publication the host saw."
    if ref["calibration_bound_ns"] is None:
        return head + (f"The guest's {ref['readings']} publications read with its {ref['source']} were not placed: "
                       f"{ref['why_not']}.")
    return head + (f"{ref['placed']} of its points are publications placed through the guest's {ref['source']} "
                   f"(calibrated against {ref['calibrated_from']} publications the host saw, to within "
                   f"{ref['calibration_bound_ns']:.0f} ns), the rest publications the host saw.")


def lost_text(l: dict, trace: dict | None) -> str:
    """How many long waits the list misses: "0" is a count, never a default."""
    if l["snapshots_without_list"]:
        return f"{l['dropped']} (+{l['snapshots_without_list']} repetition(s) without a list)"
    if trace is not None:
        loss = trace["loss"]
        if loss["log_buffers_lost"] or loss["realtime_buffers_lost"] or trace["damaged_frames"]:
            return f"≥ {l['dropped']} (buffers lost)"
    return str(l["dropped"])


def agreement_tables(summary: dict) -> list:
    """Guest steal-time class against the host timeline's class of the same waits, per phase."""
    out = []
    for key, rule in (("guest_vs_timeline", "the thresholds above"),
                      ("guest_vs_timeline_any_overlap", "the guest's rule: any off time")):
        rows, cols = [], []
        for s in summary["phases"].values():
            for row in (s.get("lhp", {}).get("agreement", {}).get(key) or {}).values():
                cols += [c for c in row if c not in cols]
        for phase, s in summary["phases"].items():
            for g, row in sorted((s.get("lhp", {}).get("agreement", {}).get(key) or {}).items()):
                rows.append([phase, g] + [str(row.get(c, 0)) for c in cols])
        if rows:
            out += [("p", f"Agreement of the two sources on the same waits (guest steal time in rows, host "
                          f"timeline in columns, by {rule}):"),
                    ("table", ["phase", "guest class"] + [f"timeline: {c}" for c in cols], rows)]
    return out


def l_thresholds(summary: dict) -> tuple:
    for s in summary["phases"].values():
        th = s.get("lhp", {}).get("thresholds") if s.get("status") != "missing" else None
        if th:
            return th["holder_off_min_fraction"], th["waiter_off_min_fraction"]
    return 0.5, 0.5


def throughput_metric(summary: dict) -> str:
    """What the run's throughput counts (summary.json's throughput.metric; one per run)."""
    for s in summary["phases"].values():
        t = s.get("throughput")
        if t and t.get("metric"):
            return t["metric"]
    return throughput.DEFAULT_METRIC


def throughput_section(summary: dict, figs: dict) -> list:
    conf = int(round(summary["confidence"] * 100))
    rows = []
    for phase, s in summary["phases"].items():
        t = s.get("throughput")
        if not t or not t["n"]:
            rows.append([phase, "missing" if s["status"] == "missing" else "not reported", "—", "—", "—"])
            continue
        ci = "— (one repetition)" if t["low"] is None else f"{num(t['low'])} … {num(t['high'])}"
        change = "—" if t["change_vs_baseline_pct"] is None else f"{t['change_vs_baseline_pct']:+.1f}%"
        rows.append([phase, num(t["mean"]), ci, str(t["n"]), change])
    return [("h2", "Throughput"),
            ("table", ["phase", f"{throughput_metric(summary)} (mean)", f"{conf}% interval", "repetitions",
                       f"change vs {summary.get('baseline_phase') or 'baseline (missing)'}"], rows),
            ("figure", figs["throughput"])]


def every_vm_rows(run) -> list:
    """Per neighbours-N phase, each VM's mean throughput over the repetitions: the measured VM
    (its snapshots) and every neighbour (snapshots/neighbours/), named as meta.json names them."""
    vms = run.meta.neighbours.vms if run.meta.neighbours else []
    own_name = run.meta.vm_name if run.meta.vm_name is not None else "measured"
    measured = next((v.name for v in vms if v.role == "measured"), own_name)
    neighbour = {i: v.name for i, v in enumerate((v for v in vms if v.role == "neighbour"), start=1)}
    rows = []
    for phase in run.phases:
        ns = [n for n in run.neighbours if n["phase"] == phase]
        if not ns:
            continue
        own = [w.get("ops_per_s") for s in run.snaps(phase) for w in s.workload.values() if isinstance(w, dict)]
        own = [x for x in own if x is not None]
        cells = [(f"{measured} (measured)", own)]
        for k in sorted({n["vm"] for n in ns}):
            cells.append((neighbour.get(k, f"neighbour {k}"),
                          [n["ops_per_s"] for n in ns if n["vm"] == k and n["ops_per_s"] is not None]))
        total = sum(sum(x) / len(x) for _, x in cells if x)
        for name, xs in cells:
            mean = sum(xs) / len(xs) if xs else None
            rows.append([phase, name, num(mean) if mean is not None else "—", str(len(xs)),
                         pct(mean / total) if mean is not None and total else "—"])
    return rows


def every_vm_section(run) -> list:
    rows = every_vm_rows(run)
    if not rows:
        return []
    return [("h2", "Every VM's throughput"),
            ("table", ["phase", "VM", "ops/s (mean)", "repetitions", "share of all VMs"], rows),
            ("p", "neighbours-N phases: each VM's own throughput classes over its own measured window, the "
                  "neighbours' from snapshots/neighbours/; equal shares are a fair host.")]


def method_section(opts, v: dict) -> list:
    conf = v["confidence"]
    return [("h2", "How the numbers are computed"), ("list", verdict_method(v) + [
        "Bucket k counts waits in [2^k, 2^(k+1)) TSC cycles (k: the most significant bit, as x86's bsr).",
        "CDFs and percentiles assume waits are log-uniform inside a bucket: the cumulative share grows "
        "linearly in log2(cycles) between bucket edges; the p-th percentile with target t = p/100 * N in "
        "bucket k is 2^(k + (t - count below k) / count in k). Overflows (untimed waits) are left out.",
        "Repetitions are pooled by adding counters; their spread is shown as bands and thin lines.",
        f"Throughput intervals: mean ± t((1+c)/2, n-1) · s/√n with Student's t (scipy.stats), c = {opts.confidence}.",
        "Table percentages (the log2 wait table, as spinstat prints it): every row, uncontended included, "
        "is a share of all acquisitions, so the rows add up to 100%."])]


def verdict_method(v: dict) -> list:
    """How the verdict's figures are computed (verdict.py), as the report's method bullets."""
    conf, thr = v["confidence"], verdict.cycles_text(v["long_wait_threshold"])
    classes = sorted({c for p in v["phases"].values() if p["status"] == "ok" for c in p["kernel_spin"]["classes"]})
    return [
        f"Verdict, headline: per repetition, the wait cycles of the long waits (≥ {thr}) whose holder was off "
        "the host CPU (the LHP attribution below: holder side off), counted inside the repetition only and per "
        "waiter vCPU as the union of their spans (overlapping waits on one vCPU count once), over vCPUs × "
        "duration (cycles per vCPU-second; over the guest TSC span, a share of vCPU time), and their number "
        "per second; waits whose "
        "holder side is uncertain or unknown are left out, and a repetition without a long-wait list has no "
        "value. Spinning on kernel locks: the wait cycles of every contended acquisition of a kernel lock class "
        "(" + (", ".join(classes) or "none found") + "; every class but the ring-3 workload classes, userN) "
        "over vCPUs × the repetition's guest TSC span, from the exact wait_cycles_sum, or where a class has only "
        "its histogram as the range between bucket edges with the log-uniform mean 2^k/ln 2 as the estimate "
        "(overflowed waits have no length and are not counted). Causes: the long waits by class; a wait "
        "behind a running holder had a slow holder when one hold lasted the threshold or more during the wait "
        "(its holder never changed, or a placed hold of its hand-over chain was that long), else it queued "
        "behind other holders.",
        f"Verdict, tests: per phase the mean over repetitions with a {conf:.0%} Student t interval; against "
        f"{v['baseline_phase']} the ratio of geometric means with the interval and the p-value of Welch's "
        "two-sided t-test on the logs (0.5 added to every count and half a threshold's cycles to every LHP "
        "cycle sum, so that a repetition without any has a logarithm; a kernel-lock share of 0 is not "
        "tested). Welch's t-test is exact for small normal samples and lets the phases' spreads differ; a "
        "bootstrap or permutation test over 3 repetitions per phase has too few distinct resamples (10) to "
        f"reach significance at all. Significant means p < {1 - conf:.2f}.",
        f"Verdict, secondary: waits ≥ 2^{v['long_k']} cycles counted per repetition from the wait histograms "
        "(exact: a bucket edge) per second and per million acquisitions, and the throughput change, tested the "
        "same way. Warnings: a baseline whose vCPUs were off the host CPU more than "
        f"{100 * verdict.BASELINE_OFF_MAX:.0f}% of the time (host timeline), and a host that is itself a VM "
        "(meta.json host.hypervisor)."]
