"""The verdict (verdict.build's dict) in words and as a table (pure).

The paragraph and the table lead with the LHP figures: cycles spun behind a preempted holder
per vCPU-second and the long waits behind one per second, the share of vCPU time spent
spinning on kernel locks, and the causes of the long waits. Waits >= 2^20 per second come
after them, marked secondary. Numbers are written with a precision fit to what they are:
rates and shares to 3 significant digits, counts whole.
"""
import math

from . import preemptors
from .lhp import HOLDER_BLOCKED, POSSIBLY_PREEMPTED, UNCERTAIN
from .lhp_share import blocked_shares, halted_shares
from .names import LHP_CLASS as L

# The causes (verdict.CAUSES' keys) as the text says them; uncertain and unknown come last.
CAUSE_NAMES = ((L.kHolderPreempted, "holder preempted"), (L.kWaiterPreempted, "waiter preempted"),
               (L.kBoth, "both"), (L.kNeither, "holder running"))


def significant(r: dict | None, confidence: float) -> bool | None:
    """True/False when a p-value exists, None when there was nothing to test."""
    if not r or r.get("p") is None:
        return None
    return r["p"] < 1.0 - confidence


def g3(x) -> str:
    """3 significant digits, thousands separated: 0.0147, 9.85, 1,430, 12,300,000."""
    if x is None:
        return "—"
    if x == 0:
        return "0"
    digits = 2 - int(math.floor(math.log10(abs(x))))
    return f"{round(x, digits):,.{max(digits, 0)}f}"


def big(x) -> str:
    """Cycle counts: 3 significant digits, millions as M and billions as G (983 M, 1.03 G)."""
    if x is None or abs(x) < 1e6:
        return g3(x)
    return f"{g3(x / 1e9)} G" if abs(x) >= 1e9 else f"{g3(x / 1e6)} M"


def pct(x) -> str:
    return "—" if x is None else f"{g3(100.0 * x)}%"


def cycles_text(c: int) -> str:
    return f"2^{c.bit_length() - 1}" if c > 0 and c & (c - 1) == 0 else f"{c:,}"


def interval(d: dict, fmt=g3) -> str:
    """A rate's interval; a rate cannot be negative, so the t interval is cut at 0."""
    if d.get("low") is None:
        return "no interval (one repetition)" if d.get("n", 0) == 1 else "no interval"
    return f"{fmt(max(d['low'], 0.0))} … {fmt(d['high'])}"


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


def cell(d: dict, is_base: bool, conf: float, fmt=g3) -> str:
    """A table cell: mean (interval), then against the baseline the ratio and its test."""
    if d["mean"] is None:
        return "— (no data)"
    out = f"{fmt(d['mean'])} ({interval(d, fmt)})"
    return out if is_base else f"{out}; {ratio_text(d['vs_baseline'])}, {p_text(d['vs_baseline'], conf)}"


def kernel_value(k: dict) -> str:
    """The kernel-lock spin share: exact, or the bucket-edge range with its estimate."""
    if k["share"]["mean"] is None:
        return "—"
    if k["exact"]:
        return pct(k["share"]["mean"])
    return f"{pct(k['lo'])}–{pct(k['hi'])} (bucket edges; estimate {pct(k['share']['mean'])})"


def kernel_cell(k: dict, is_base: bool, conf: float) -> str:
    s = k["share"]
    if s["mean"] is None:
        return "— (no data)"
    out = f"{kernel_value(k)} ({interval(s, pct)})"
    return out if is_base else f"{out}; {ratio_text(s['vs_baseline'])}, {p_text(s['vs_baseline'], conf)}"


def running_text(c: dict) -> str:
    bits = [f"{c['slow_holder']} slow holder(s)", f"{c['queued']} queued behind other holders"]
    if c["holder_not_known"]:
        bits.append(f"{c['holder_not_known']} holder not known")
    return ", ".join(bits)


# The analysis' own classes, named only where a run has them (a guest's holder that blocked inside
# QEMU under TCG; a Linux guest's possible holders at more than 2 vCPUs).
EXTRA_CAUSES = ((HOLDER_BLOCKED, "holder blocked (off only while its thread blocked by itself, not preempted)"),
                (POSSIBLY_PREEMPTED, "possibly preempted (one of the possible holders was off: a bound)"))


def extra_causes(c: dict, short: bool = False) -> list:
    return [f"{c.get(key, 0)} {name.split(' (')[0]}" if short else f"{name} {c.get(key, 0)}"
            for key, name in EXTRA_CAUSES if c.get(key)]


def causes_text(c: dict) -> str:
    """holder preempted 2, waiter preempted 1, both 0, holder running 3 (...), uncertain 0, unknown 1."""
    out = [f"{name} {c[key]}" + (f" ({running_text(c)})" if key == L.kNeither and c[key] else "")
           for key, name in CAUSE_NAMES]
    return ", ".join(out + extra_causes(c) + [f"uncertain {c[UNCERTAIN]}", f"unknown {c[L.kUnknown]}"])


def causes_cell(c: dict) -> str:
    """The table's short form: 3 / 1 / 0 / 2 (2 slow, 0 queued); 0 uncertain, 1 unknown."""
    running = f" ({c['slow_holder']} slow, {c['queued']} queued" + (
        f", {c['holder_not_known']} not known)" if c["holder_not_known"] else ")")
    return (" / ".join(str(c[key]) for key, _ in CAUSE_NAMES) + running + "; " +
            ", ".join(extra_causes(c, short=True) + [f"{c[UNCERTAIN]} uncertain", f"{c[L.kUnknown]} unknown"]))


def tp_text(t: dict | None) -> str:
    if not t or t["change_pct"] is None:
        return "—"
    if t["low_pct"] is None:
        return f"{t['change_pct']:+.1f}% (no interval)"
    return f"{t['change_pct']:+.1f}% ({t['low_pct']:+.1f} … {t['high_pct']:+.1f}%)"


def table(v: dict) -> tuple[list, list]:
    """One row per phase: the headline columns first, the secondary rate and throughput last."""
    conf, base = v["confidence"], v["baseline_phase"]
    c = int(round(conf * 100))
    vs = f"× {base} (CI), test"
    head = ["phase", "reps", f"spin behind a preempted holder, cycles per vCPU-s ({c}% CI); {vs}",
            f"long waits behind a preempted holder per s ({c}% CI); {vs}",
            f"spinning on kernel locks, share of vCPU time ({c}% CI); {vs}",
            f"causes of long waits ≥ {cycles_text(v['long_wait_threshold'])}: holder preempted / waiter preempted / "
            "both / holder running (slow holder, queued behind others)", "vCPUs off the host CPU",
            f"secondary: waits ≥ 2^{v['long_k']} per s ({c}% CI); {vs}", f"throughput change ({c}% CI)"]
    rows = []
    for phase, p in v["phases"].items():
        if p["status"] == "missing":
            rows.append([phase, "missing"] + ["—"] * (len(head) - 2))
            continue
        is_base, l = phase == base, p["lhp_spin"]
        rows.append([phase, str(p["repetitions"]), cell(l["cycles_per_vcpu_second"], is_base, conf, big),
                     cell(l["waits_per_second"], is_base, conf), kernel_cell(p["kernel_spin"], is_base, conf),
                     causes_cell(p["causes"]), pct(p["vcpu_off_share"]), cell(p["per_second"], is_base, conf),
                     "baseline" if is_base else tp_text(p["throughput"])])
    return head, rows


# The paragraph ------------------------------------------------------------------------------

def against(r: dict | None, conf: float) -> str:
    """', ×R the baseline (95% CI a … b; p = ..., significant)' and the like."""
    if not r or r.get("ratio") is None:
        return ", not comparable with the baseline (a side has no value above 0)"
    c = int(round(conf * 100))
    s = f", ×{g3(r['ratio'])} the baseline"
    sig = significant(r, conf)
    if sig is None:
        return s + " (no test: fewer than two repetitions on a side, or none varying)"
    ci = f"{c}% CI {g3(r['low'])} … {g3(r['high'])}; " if r.get("low") is not None else ""
    if sig:
        return s + f" ({ci}p = {r['p']:.3f}, significant)"
    return s + f" ({ci}p = {r['p']:.3f}, NOT significant: {r['n']} and {r['n_base']} repetitions cannot tell it from chance)"


def with_ci(d: dict, unit: str, conf: float, fmt=g3) -> str:
    return f"{fmt(d['mean'])} {unit} ({int(round(conf * 100))}% CI {interval(d, fmt)})"


def preemptor_sentence(p: dict | None) -> str | None:
    return preemptors.sentence(p)


def lhp_sentences(p: dict, conf: float) -> str:
    l, n = p["lhp_spin"], p["repetitions"]
    cyc, waits = l["cycles_per_vcpu_second"], l["waits_per_second"]
    bound = l.get("at_most_cycles_per_vcpu_second")
    if cyc["mean"] is None and bound and bound["mean"] is not None:
        return (f"its spin behind preempted holders is not known: at most {with_ci(bound, 'cycles per vCPU-second', conf, big)}"
                f"{against(bound['vs_baseline'], conf)}, behind a holder that was possibly preempted (a bound).")
    if cyc["mean"] is None:
        return "its spin behind preempted holders is unknown: no repetition's long waits were listed and attributed."
    out = (f"vCPUs spun {with_ci(cyc, 'cycles per vCPU-second', conf, big)} behind a preempted holder "
           f"({pct(l['share_of_vcpu_time']['mean'])} of vCPU time){against(cyc['vs_baseline'], conf)}. "
           f"Long waits behind a preempted holder (holder preempted or both): {with_ci(waits, 'per second', conf)}{against(waits['vs_baseline'], conf)}.")
    if l["repetitions_attributed"] < n:
        out += (f" (From the {l['repetitions_attributed']} of {n} repetitions whose long waits were listed and "
                "could be attributed.)")
    who = preemptor_sentence(p.get("preemptors"))
    if who:
        out += f" Of the spin behind a preempted holder, {who}."
    return out


def kernel_sentence(p: dict, bp: dict, conf: float) -> str:
    k = p["kernel_spin"]
    if k["share"]["mean"] is None:
        return "The time spent spinning on kernel locks is unknown (no guest TSC span)."
    s = (f"Spinning on kernel locks took {kernel_value(k)} of vCPU time ({int(round(conf * 100))}% CI "
         f"{interval(k['share'], pct)}), against {kernel_value(bp['kernel_spin'])} in the baseline")
    return s + against(k["share"]["vs_baseline"], conf) + "."


def causes_sentence(p: dict, v: dict) -> str:
    c = p["causes"]
    if not c["long_waits"]:
        return f"No long wait (≥ {cycles_text(v['long_wait_threshold'])} cycles) was listed."
    s = f"Causes of its {c['long_waits']} listed long waits (≥ {cycles_text(v['long_wait_threshold'])} cycles): {causes_text(c)}"
    if c[L.kNeither]:
        s += (f"; the hold histograms timed {c['holds_ge_threshold']} hold(s) ≥ "
              f"{cycles_text(v['long_wait_threshold'])}")
    return s + "."


def secondary_sentence(p: dict, v: dict) -> str:
    ps, conf = p["per_second"], v["confidence"]
    r = ps["vs_baseline"]
    s = (f"Secondary: waits of 2^{v['long_k']} cycles and more occurred {g3(ps['mean'])} times per second "
         f"({int(round(conf * 100))}% CI {interval(ps)}){against(r, conf)}")
    lr = p["lhp_spin"]["waits_per_second"]["vs_baseline"]
    if r and lr and r.get("ratio") is not None and lr.get("ratio") is not None and r["ratio"] < 1 < lr["ratio"]:
        s += (": fewer long waits, yet more of them behind a preempted holder, so counting long waits hides "
              "the LHP signal")
    s += "."
    t = p["throughput"]
    if t and t["change_pct"] is not None:
        s += f" Throughput changed by {tp_text(t)}."
    return s


def baseline_sentence(base: str, bp: dict, conf: float) -> str:
    l = bp["lhp_spin"]
    spin = ("an unknown number of cycles behind a preempted holder (no long waits listed and attributed)"
            if l["cycles_per_vcpu_second"]["mean"] is None else
            f"{big(l['cycles_per_vcpu_second']['mean'])} cycles per vCPU-second behind a preempted holder "
            f"(in {g3(l['waits_per_second']['mean'])} long waits per second)")
    return (f"In {base} (the baseline, {bp['repetitions']} repetitions), vCPUs spun {spin} and spent "
            f"{kernel_value(bp['kernel_spin'])} of their time spinning on kernel locks.")


def headline(phase: str, p: dict, v: dict) -> str:
    """One sentence: what a phase did to the spin behind preempted holders, against the baseline."""
    conf, c = v["confidence"], int(round(v["confidence"] * 100))
    if p["status"] == "missing":
        return f"{phase}: no snapshot, no verdict."
    cyc = p["lhp_spin"]["cycles_per_vcpu_second"]
    bound = p["lhp_spin"].get("at_most_cycles_per_vcpu_second")
    if cyc["mean"] is None and bound and bound["mean"] is not None:
        return (f"{phase}: the spin behind a preempted holder is not known, at most {big(bound['mean'])} cycles per "
                f"vCPU-second ({c}% CI {interval(bound, big)}; a bound: the holder is one of several vCPUs, and one "
                "of them was off).")
    if cyc["mean"] is None:
        return f"{phase}: the spin behind a preempted holder is unknown (no long waits listed and attributed)."
    if phase == v["baseline_phase"]:
        return (f"{phase} (the baseline): {big(cyc['mean'])} cycles per vCPU-second spun behind a preempted "
                f"holder ({pct(p['lhp_spin']['share_of_vcpu_time']['mean'])} of vCPU time).")
    r = cyc["vs_baseline"]
    if not r or r.get("ratio") is None:
        return (f"{phase}: {big(cyc['mean'])} cycles per vCPU-second behind a preempted holder, not comparable "
                "with the baseline (a side has no value above 0).")
    sig = significant(r, conf)
    ci = f" ({c}% CI {g3(r['low'])} … {g3(r['high'])})" if r.get("low") is not None else ""
    test = {True: "significant", False: "NOT significant", None: "not tested (fewer than two repetitions on a side)"}[sig]
    return f"{phase}: ×{g3(r['ratio'])} the spin behind a preempted holder{ci}, {test}."


def headlines(v: dict) -> list:
    """The verdict's lead: one sentence per phase, the baseline first."""
    base = v["baseline_phase"]
    bp = v["phases"].get(base) if base else None
    if not bp or bp["status"] == "missing":
        return [f"No verdict: the baseline phase {base or '(none)'} has no snapshot, so nothing can be "
                "compared with it. The figures below show what was measured."]
    return [headline(base, bp, v)] + [headline(ph, p, v) for ph, p in v["phases"].items() if ph != base]


def details(v: dict) -> list:
    """The detail under the lead, one item per phase: the baseline, then each phase against it
    (the LHP figures first, kernel-lock spin, the causes, the secondary rates), and the host
    timeline's off shares."""
    base, conf = v["baseline_phase"], v["confidence"]
    bp = v["phases"].get(base) if base else None
    if not bp or bp["status"] == "missing":
        return []
    items = [baseline_sentence(base, bp, conf)]
    for phase, p in v["phases"].items():
        if phase == base or p["status"] == "missing":
            continue
        items.append(" ".join([f"In {phase}, {lhp_sentences(p, conf)}", kernel_sentence(p, bp, conf),
                               causes_sentence(p, v), secondary_sentence(p, v)]))
    shares = [(ph, p["vcpu_off_share"]) for ph, p in v["phases"].items() if p.get("vcpu_off_share") is not None]
    if shares:
        items.append("The host timeline had the vCPUs off the host CPU " +
                     ", ".join(f"{pct(x)} of the time in {ph}" for ph, x in shares) + ".")
    if blocked := blocked_sentence(v):
        items.append(blocked)
    return items


def blocked_sentence(v: dict) -> str | None:
    """Per phase, the share of the long waits' holder-off and waiter-off time in which the vCPU
    thread blocked by itself (under TCG: inside QEMU) rather than being preempted, and where the
    guest records its halts, the share in which it had halted; None when no phase has either."""
    parts, halts, recorded = [], [], None
    for phase, p in v["phases"].items():
        oc = p.get("off_cycles")
        if p["status"] == "missing" or not oc:
            continue
        recorded = recorded or oc["holder"].get("halted") is not None
        if oc["holder"]["blocked"] or oc["waiter"]["blocked"]:
            shares = blocked_shares(oc)
            share = lambda side: pct(shares[side]) if side in shares else "none"
            parts.append(f"{share('holder')} of the holders' and {share('waiter')} of the waiters' off time in {phase}")
        if oc["holder"].get("halted") or oc["waiter"].get("halted"):
            hs = halted_shares(oc)
            share = lambda side: pct(hs[side]) if side in hs else "none"
            halts.append(f"{share('holder')} of the holders' and {share('waiter')} of the waiters' off time in {phase}")
    out = []
    if parts:
        out.append("Of the long waits' off time, the vCPU thread blocked by itself while its guest had work "
                   "(under TCG: inside QEMU, such as waiting for its global lock), not preempted, for " +
                   "; ".join(parts) + ". A wait whose holder was off only so is 'holder blocked', not behind a "
                   "preempted holder." + ("" if recorded else " This guest records no halts, so a vCPU that halted "
                                          "is counted here too."))
    if halts:
        out.append("Its guest had halted (the vCPU idle, or a waiter halted for its kick; the guest's own record, "
                   "halts.csv) for " + "; ".join(halts) + ": that time counts as neither off nor on.")
    return " ".join(out) or None


def paragraph(v: dict) -> str:
    """The verdict in words: the headlines (one sentence per phase), then the details."""
    return "\n".join(headlines(v) + [""] + details(v)).rstrip("\n")
