"""The verdict that opens the report: did long waits become more frequent, and why? (pure)

Per phase and repetition, the waits of 2^20 cycles and more are counted from the wait
histograms (exact: 2^20 is a bucket edge) and turned into two rates: per second of measurement
and per million acquisitions. Each rate gets its mean with a Student t interval across
repetitions (confidence.mean_ci) and its ratio to the baseline phase with Welch's t interval
and test on log rates (confidence.log_ratio; why that test is in its docstring). A repetition
with no long wait would have log 0 = -inf, so 0.5 is added to every count before the log
(the usual continuity correction for counts); the means and intervals of the rates themselves
use the raw counts. The share of long waits with a preempted holder comes from the LHP
attribution (lhp.py), with uncertain and unknown waits counted apart; the throughput change is
the ratio of lockbench throughput to the baseline's, tested the same way.
"""
import math

import numpy as np

from .confidence import log_ratio, mean_ci
from .contract import OFF_STATES, UNKNOWN_STATE

LONG_K = 20  # waits >= 2^20 cycles, whatever the LHP threshold: the question the issue asks
CORRECTION = 0.5


def rep_rates(snaps) -> list:
    """Per repetition: rep, long waits (>= 2^LONG_K), acquisitions, duration_s."""
    out = []
    for s in snaps:
        long = sum(int(st.wait[LONG_K:].sum()) for st in s.stats)
        out.append({"rep": s.rep, "long_waits": long, "acquisitions": sum(st.acquisitions for st in s.stats),
                    "duration_s": s.duration_s})
    return out


def _per_second(r, corr=0.0):
    return (r["long_waits"] + corr) / r["duration_s"] if r["duration_s"] else None


def _per_million(r, corr=0.0):
    return (r["long_waits"] + corr) * 1e6 / r["acquisitions"] if r["acquisitions"] else None


def _rate(reps, base_reps, fn, confidence: float, is_base: bool) -> dict:
    values = [v for v in (fn(r) for r in reps) if v is not None]
    out = mean_ci(values, confidence)
    out["values"] = values
    if is_base or base_reps is None:
        out["vs_baseline"] = None
        return out
    corrected = [v for v in (fn(r, CORRECTION) for r in reps) if v is not None]
    base = [v for v in (fn(r, CORRECTION) for r in base_reps) if v is not None]
    out["vs_baseline"] = log_ratio(corrected, base, confidence) if corrected and base else None
    return out


def lhp_counts(lhp: dict | None) -> dict | None:
    """holder preempted / holder running / uncertain / unknown long waits and the share."""
    if not lhp:
        return None
    off, on = lhp.get("holder_off", 0), lhp.get("holder_on", 0)
    return {"long_waits": lhp.get("long_waits", 0), "holder_off": off, "holder_on": on,
            "uncertain": lhp.get("uncertain", 0), "unknown": lhp.get("unknown", 0),
            "share": off / (off + on) if off + on else None}


def throughput_change(tp: dict | None, base_tp: dict | None, confidence: float, is_base: bool) -> dict | None:
    if is_base or not tp or not base_tp or not tp.get("values") or not base_tp.get("values"):
        return None
    if min(tp["values"]) <= 0 or min(base_tp["values"]) <= 0:
        return None
    r = log_ratio(tp["values"], base_tp["values"], confidence)
    pct = lambda x: None if x is None else (x - 1.0) * 100.0
    return {"change_pct": pct(r["ratio"]), "low_pct": pct(r["low"]), "high_pct": pct(r["high"]), "p": r["p"],
            "df": r["df"]}


def off_share(timeline, phase: str) -> float | None:
    """Share of the covered time the phase's vCPUs were off the host CPU (off or frozen), over all
    vCPUs and repetitions: what "idle host" really meant. Time whose state the host trace does
    not show ('unknown') is left out of both. None without a timeline for the phase."""
    if timeline is None:
        return None
    df = timeline[timeline["phase"] == phase]
    covered = off = 0.0
    for _, g in df.groupby(["vcpu", "rep"]):
        covered += float(g["end_host_tsc"].max() - g["start_host_tsc"].min())
        unknown = g[g["state"] == UNKNOWN_STATE]
        covered -= float((unknown["end_host_tsc"] - unknown["start_host_tsc"]).sum())
        o = g[g["state"].isin(OFF_STATES)].sort_values("start_host_tsc")
        reach = -math.inf
        for a, b in zip(o["start_host_tsc"].to_numpy(np.float64), o["end_host_tsc"].to_numpy(np.float64)):
            a = max(a, reach)  # the union: off and frozen intervals may overlap
            if b > a:
                off += b - a
                reach = b
    return off / covered if covered > 0 else None


def build(run, summary: dict) -> dict:
    """The verdict of one run: per phase rates, ratios, LHP shares and throughput change."""
    conf = summary["confidence"]
    base = summary["baseline_phase"]
    base_reps = rep_rates(run.snaps(base)) if base and run.snaps(base) else None
    phases = {}
    for phase in run.phases:
        snaps = run.snaps(phase)
        if not snaps:
            phases[phase] = {"status": "missing"}
            continue
        reps = rep_rates(snaps)
        s = summary["phases"][phase]
        is_base = phase == base
        phases[phase] = {
            "status": "ok", "repetitions": len(reps), "long_waits": sum(r["long_waits"] for r in reps),
            "per_second": _rate(reps, base_reps, _per_second, conf, is_base),
            "per_million_acquisitions": _rate(reps, base_reps, _per_million, conf, is_base),
            "lhp": lhp_counts(s.get("lhp")),
            "vcpu_off_share": off_share(run.timeline, phase),
            "throughput": throughput_change(s.get("throughput"), summary["phases"].get(base, {}).get("throughput"),
                                            conf, is_base),
        }
    return {"baseline_phase": base, "confidence": conf, "long_k": LONG_K, "threshold_cycles": summary["threshold_cycles"],
            "test": "Welch's two-sided t-test on log rates across repetitions (0.5 added to counts)",
            "phases": phases}


def significant(r: dict | None, confidence: float) -> bool | None:
    """True/False when a p-value exists, None when there was nothing to test."""
    if not r or r.get("p") is None:
        return None
    return r["p"] < 1.0 - confidence


# Text. Numbers are written with a precision fit to what they are: rates to 3 significant
# digits, ratios to 2 decimals, shares to whole percent.

def g3(x) -> str:
    if x is None:
        return "—"
    if x == 0:
        return "0"
    digits = max(0, 2 - int(math.floor(math.log10(abs(x)))))
    return f"{x:,.{digits}f}"


def cycles_text(c: int) -> str:
    return f"2^{c.bit_length() - 1}" if c > 0 and c & (c - 1) == 0 else f"{c:,}"


def interval(d: dict) -> str:
    """A rate's interval; a rate cannot be negative, so the t interval is cut at 0."""
    if d.get("low") is None:
        return "no interval (one repetition)" if d.get("n", 0) == 1 else "no interval"
    return f"{g3(max(d['low'], 0.0))} … {g3(d['high'])}"


def ratio_text(r: dict | None) -> str:
    if not r or r.get("ratio") is None:
        return "—"
    if r.get("low") is None:
        return f"×{g3(r['ratio'])} (no interval)"
    return f"×{g3(r['ratio'])} ({g3(r['low'])} … {g3(r['high'])})"


def p_text(r: dict | None, confidence: float) -> str:
    sig = significant(r, confidence)
    if sig is None:
        return "not testable"
    return f"p = {r['p']:.3f}, " + ("significant" if sig else "NOT significant")


def share_text(l: dict | None) -> str:
    if not l or not l["long_waits"]:
        return "no long waits listed"
    share = "—" if l["share"] is None else f"{100 * l['share']:.0f}%"
    known = l["holder_off"] + l["holder_on"]
    return f"{share} of {known} ({l['uncertain']} uncertain, {l['unknown']} unknown apart)"


def tp_text(t: dict | None, confidence: float) -> str:
    if not t or t["change_pct"] is None:
        return "—"
    if t["low_pct"] is None:
        return f"{t['change_pct']:+.1f}% (no interval)"
    return f"{t['change_pct']:+.1f}% ({t['low_pct']:+.1f} … {t['high_pct']:+.1f}%)"


def table(v: dict) -> tuple[list, list]:
    conf = int(round(v["confidence"] * 100))
    head = ["phase", "reps", f"waits ≥ 2^{v['long_k']} per s ({conf}% CI)", f"× {v['baseline_phase']} (CI), test",
            "per 10^6 acquisitions (CI)", f"× {v['baseline_phase']} (CI), test",
            f"holder preempted (of waits ≥ {cycles_text(v['threshold_cycles'])})", f"throughput change ({conf}% CI)"]
    rows = []
    for phase, p in v["phases"].items():
        if p["status"] == "missing":
            rows.append([phase, "missing"] + ["—"] * (len(head) - 2))
            continue
        ps, pm = p["per_second"], p["per_million_acquisitions"]
        base = phase == v["baseline_phase"]
        rows.append([phase, str(p["repetitions"]), f"{g3(ps['mean'])} ({interval(ps)})",
                     "baseline" if base else f"{ratio_text(ps['vs_baseline'])}, {p_text(ps['vs_baseline'], v['confidence'])}",
                     f"{g3(pm['mean'])} ({interval(pm)})",
                     "baseline" if base else f"{ratio_text(pm['vs_baseline'])}, {p_text(pm['vs_baseline'], v['confidence'])}",
                     share_text(p["lhp"]), "baseline" if base else tp_text(p["throughput"], v["confidence"])])
    return head, rows


def paragraph(v: dict) -> str:
    """The verdict in words, one sentence group per phase compared with the baseline."""
    base, conf = v["baseline_phase"], v["confidence"]
    bp = v["phases"].get(base) if base else None
    if not bp or bp["status"] == "missing":
        return (f"No verdict: the baseline phase {base or '(none)'} has no snapshot, so nothing can be "
                "compared with it. The figures below show what was measured.")
    cpct = int(round(conf * 100))
    parts = [f"In {base} (the baseline, {bp['repetitions']} repetitions), waits of 2^{v['long_k']} cycles and "
             f"more occurred {g3(bp['per_second']['mean'])} times per second "
             f"({g3(bp['per_million_acquisitions']['mean'])} per million acquisitions)."]
    for phase, p in v["phases"].items():
        if phase == base:
            continue
        if p["status"] == "missing":
            parts.append(f"{phase}: no snapshot, no verdict.")
            continue
        ps = p["per_second"]
        r = ps["vs_baseline"]
        s = (f"In {phase} they occurred {g3(ps['mean'])} times per second ({cpct}% CI {interval(ps)}), ")
        if r and r.get("ratio") is not None:
            s += f"{g3(r['ratio'])} times the baseline rate"
            if r.get("low") is not None:
                s += f" ({cpct}% CI {g3(r['low'])} … {g3(r['high'])})"
            if r["ratio"] < 1:
                s += ", fewer than in the baseline"
            sig = significant(r, conf)
            if sig is None:
                s += "; with fewer than two repetitions on a side (or none varying) no test is possible."
            elif sig:
                s += f": a significant difference (Welch's t-test on log rates, p = {r['p']:.3f})."
            else:
                s += (f": the difference is NOT significant (Welch's t-test on log rates, p = {r['p']:.3f}); "
                      f"{p['repetitions']} and {bp['repetitions']} repetitions cannot tell it from chance.")
        else:
            s += "and the ratio to the baseline cannot be computed."
        l = p["lhp"]
        if l and l["share"] is not None:
            s += (f" Of the attributable long waits, {100 * l['share']:.0f}% had a preempted holder "
                  f"({l['holder_off']} of {l['holder_off'] + l['holder_on']}; "
                  f"{l['uncertain']} uncertain and {l['unknown']} unknown not counted).")
        elif l and l["long_waits"]:
            s += f" None of its {l['long_waits']} listed long waits could be attributed."
        t = p["throughput"]
        if t and t["change_pct"] is not None:
            s += f" Throughput changed by {t['change_pct']:+.1f}%"
            s += f" ({cpct}% CI {t['low_pct']:+.1f} … {t['high_pct']:+.1f}%)." if t["low_pct"] is not None else "."
        parts.append(s)
    shares = [(ph, p["vcpu_off_share"]) for ph, p in v["phases"].items() if p.get("vcpu_off_share") is not None]
    if shares:
        parts.append("The host timeline had the vCPUs off the host CPU " +
                     ", ".join(f"{100 * x:.0f}% of the time in {ph}" for ph, x in shares) +
                     (f"; a baseline whose vCPUs were often off was not an idle host." if
                      v["phases"][base].get("vcpu_off_share", 0) and v["phases"][base]["vcpu_off_share"] > 0.1 else "."))
    return " ".join(parts)
