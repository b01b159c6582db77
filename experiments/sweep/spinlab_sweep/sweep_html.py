"""sweep.html: the table per cell and the figures across the axes, self-contained.

Figures: the share of contended waits of 2^20 cycles and more by the first axis, grouped by the
other axes, one panel per phase (bars: all repetitions pooled; whiskers: the lowest and highest
single repetition); and throughput per phase for every cell (whiskers: the report's interval).
"""
import base64
import html
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from . import speedup  # noqa: E402
from .aggregate import phases_of  # noqa: E402

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]


def _label(values: dict, keys: list) -> str:
    return ", ".join(f"{k.split('.', 1)[-1]}={values[k]}" for k in keys) or "all"


def _bars(ax, groups: list, series: dict, lo: dict, hi: dict, ylabel: str):
    """Grouped bars: groups on x, one bar per series name; lo/hi give whiskers (None: none)."""
    width = 0.8 / max(1, len(series))
    x = np.arange(len(groups))
    for i, (name, vals) in enumerate(series.items()):
        h = np.array([np.nan if v is None else v for v in vals], dtype=float)
        pos = x - 0.4 + width * (i + 0.5)
        ax.bar(pos, h, width, label=name, color=PALETTE[i % len(PALETTE)])
        for j, (l, u) in enumerate(zip(lo[name], hi[name])):
            if l is not None and u is not None:
                ax.plot([pos[j], pos[j]], [l, u], color="black", linewidth=1)
    ax.set_xticks(x, groups)
    ax.set_ylabel(ylabel)


def share_figure(plan: dict, rows: list, path: str) -> str:
    axes = [a["key"] for a in plan["axes"]]
    first, rest = axes[0], axes[1:]
    phases = phases_of(rows) or ["(no data)"]
    groups = plan["axes"][0]["values"]
    fig, axs = plt.subplots(1, len(phases), figsize=(4.2 * len(phases), 3.4), squeeze=False, sharey=True)
    for ax, phase in zip(axs[0], phases):
        series, lo, hi = {}, {}, {}
        for r in rows:
            name = _label(r["values"], rest)
            series.setdefault(name, [None] * len(groups))
            lo.setdefault(name, [None] * len(groups))
            hi.setdefault(name, [None] * len(groups))
            figs = r["phases"].get(phase, {})
            j = groups.index(r["values"][first])
            series[name][j], lo[name][j], hi[name][j] = (figs.get("share_waits_ge_2^20"),
                                                        figs.get("share_min"), figs.get("share_max"))
        _bars(ax, groups, series, lo, hi, "share of contended waits ≥ 2^20 cycles")
        ax.set_title(phase)
        ax.set_xlabel(first.split(".", 1)[-1])
    axs[0][-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def throughput_figure(rows: list, path: str) -> str:
    phases = phases_of(rows) or ["(no data)"]
    series = {r["cell"]: [r["phases"].get(p, {}).get("throughput") for p in phases] for r in rows}
    lo = {r["cell"]: [r["phases"].get(p, {}).get("throughput_low") for p in phases] for r in rows}
    hi = {r["cell"]: [r["phases"].get(p, {}).get("throughput_high") for p in phases] for r in rows}
    fig, ax = plt.subplots(figsize=(max(5, 1.6 * len(phases) + 0.25 * len(rows)), 3.4))
    _bars(ax, phases, series, lo, hi, "throughput (ops/s)")
    ax.set_xlabel("host condition (phase)")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def _pct(v) -> str:
    return "" if v is None else f"{100 * v:.2f} %"


def _num(v, fmt="{:.0f}") -> str:
    return "" if v is None else fmt.format(v)


def table_html(plan: dict, rows: list) -> str:
    axes = [a["key"] for a in plan["axes"]]
    phases = phases_of(rows)
    head = "".join(f"<th>{html.escape(k)}</th>" for k in axes) + "<th>state</th>"
    head += "".join(f"<th>{html.escape(p)}: waits ≥ 2^20 (share)</th><th>{html.escape(p)}: LHP share</th>"
                    f"<th>{html.escape(p)}: ops/s (change)</th>" for p in phases)
    body = []
    for r in rows:
        cells = "".join(f"<td>{html.escape(str(r['values'][k]))}</td>" for k in axes)
        link = f"cells/{r['cell']}/report.html"
        cells += f"<td><a href='{html.escape(link)}'>{html.escape(r['state'])}</a></td>"
        for p in phases:
            f = r["phases"].get(p, {})
            change = f.get("throughput_change_pct")
            waits = f.get("waits_ge_2^20")
            share = "" if waits is None else f"{waits} ({_pct(f.get('share_waits_ge_2^20'))})"
            cells += (f"<td>{share}</td>"
                      f"<td>{_pct(f.get('lhp_share'))}</td>"
                      f"<td>{_num(f.get('throughput'))}{'' if change is None else f' ({change:+.1f} %)'}</td>")
        body.append(f"<tr>{cells}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _oc(v) -> str:
    return "?" if v is None else f"{v:g}"


def _speedup_cell(entry: dict | None) -> str:
    if entry is None:
        return "<td></td>"
    s = entry["speedup"]
    p = "" if s.get("p") is None else f"<br><small>p = {s['p']:.2g}</small>"
    return f"<td>{html.escape(speedup.ratio_text(s))}{p}</td>"


def speedup_html(plan: dict, rows: list) -> str:
    """The VEE'13-form table: per overcommit level and host condition, each lock's throughput
    over the ticket lock's with its interval; '' when the sweep has no ticket cells."""
    entries = speedup.table(plan, rows)
    if not speedup.applies(plan):
        return ""
    if not entries:
        unreported = sum(1 for r in rows if r["state"] == "complete" and not r["phases"])
        why = (f" {unreported} complete cell(s) have no report (no summary.json: a sweep run with "
               "--no-cell-report); run spinlab-report on each cell, then `spinlab-sweep aggregate "
               "SWEEP-DIR`." if unreported else "")
        return ("<h2>Speedup over the ticket lock</h2><p>No pair of cells with throughputs to compare "
                f"(a lock's cell and the ticket cell of the same other axis values).{html.escape(why)}</p>")
    locks = [l for l in next(a["values"] for a in plan["axes"] if a["key"] == speedup.LOCK_AXIS)
             if l != speedup.BASELINE]
    lines, seen = [], []
    for e in entries:
        key = (e["overcommit"], tuple(sorted(e["others"].items())), e["phase"])
        if key not in seen:
            seen.append(key)
    for oc, others, phase in seen:
        mine = {e["lock"]: e for e in entries
                if (e["overcommit"], tuple(sorted(e["others"].items())), e["phase"]) == (oc, others, phase)}
        cells = "".join(_speedup_cell(mine.get(l)) for l in locks)
        other = ", ".join(f"{k.split('.', 1)[-1]}={v}" for k, v in others)
        lines.append(f"<tr><td>{_oc(oc)}</td><td>{html.escape(other)}</td><td>{html.escape(phase)}</td>{cells}</tr>")
    head = "".join(f"<th>{html.escape(l)}</th>" for l in locks)
    paper = "".join(f"<li>{html.escape(t)}: {v:.2f}x</li>" for t, v in speedup.PAPER)
    return f"""<h2>Speedup over the ticket lock</h2>
<p>Throughput (each cell's throughput classes' acquisitions per second: lockbench's ops, or the
kernel classes kmix drives) of each lock over the ticket lock's in the cell with the same other axis
values: the ratio of geometric means of the repetitions, with its 95 % Welch interval and p-value.
Overcommit is the cell's vCPUs over its host's CPUs. Per cell (below and in speedup.csv): the long
waits behind a preempted holder, the share of spin behind a preempted holder, the long waits' causes,
halts and kicks per second, the spin cycles per acquisition.</p>
<table><tr><th>vCPUs per host CPU</th><th>other axes</th><th>host condition</th>{head}</tr>{''.join(lines)}</table>
{_without_throughput_html(rows)}
{order_html(entries)}
{pairs_html(plan, rows)}
<p>The published figures, for comparison (speedup over the lock each replaced):</p>
<ul>{paper}</ul>
{_per_cell_html(plan, rows)}"""


def order_html(entries: list) -> str:
    """The measured order of tas, pvqspin, pticket, mcs and ticket under overcommit."""
    orders = speedup.measured_order(entries)
    if not orders:
        return ("<h3>Measured order under overcommit</h3><p>No cell above 1 vCPU per host CPU with a lock "
                f"of {', '.join(speedup.ORDERED)} besides ticket.</p>")
    items = []
    for o in orders:
        other = ", ".join(f"{k.split('.', 1)[-1]}={v}" for k, v in sorted(o["others"].items()))
        items.append(f"<li>{_oc(o['overcommit'])} vCPUs per host CPU, {html.escape(other)}, "
                     f"{html.escape(o['phase'])}: {html.escape(speedup.order_text(o))}</li>")
    return ("<h3>Measured order under overcommit</h3><p>Best first, by speedup over ticket "
            f"(of {', '.join(speedup.ORDERED)}):</p><ul>{''.join(items)}</ul>")


def _without_throughput_html(rows: list) -> str:
    """The cells' phases left out of the ratios because a repetition made no progress."""
    gone = speedup.without_throughput(rows)
    if not gone:
        return ""
    items = "".join(f"<li>{html.escape(cell)}, {html.escape(phase)}: "
                    f"{html.escape(', '.join(f'{x:g}' for x in xs))} per second</li>" for cell, phase, xs in gone)
    return ("<p>Left out of the ratios (a repetition with no throughput, so its lock made no progress "
            f"there and the ratio of geometric means is undefined):</p><ul>{items}</ul>")


def pairs_html(plan: dict, rows: list) -> str:
    """Every two locks against each other under overcommit (speedup.pairs), per group: the pairs
    whose interval lies above 1 ("beats"), then those it does not separate; '' without a pair."""
    entries = [e for e in speedup.pairs(plan, rows) if e["overcommit"] is not None and e["overcommit"] > 1]
    if not entries:
        return ""
    groups = []
    for e in entries:
        key = (e["overcommit"], tuple(sorted(e["others"].items())), e["phase"])
        if key not in groups:
            groups.append(key)
    items = []
    for oc, others, phase in groups:
        mine = [e for e in entries if (e["overcommit"], tuple(sorted(e["others"].items())), e["phase"]) == (oc, others, phase)]
        won = [f"{e['faster']} beats {e['slower']} {speedup.ratio_text(e['speedup'])}" for e in mine if e["separated"]]
        tied = [f"{e['faster']} / {e['slower']} {speedup.ratio_text(e['speedup'])}" for e in mine if not e["separated"]]
        other = ", ".join(f"{k.split('.', 1)[-1]}={v}" for k, v in others)
        text = "; ".join(won) or "no lock beats another"
        if tied:
            text += f". Not separated: {'; '.join(tied)}"
        items.append(f"<li>{_oc(oc)} vCPUs per host CPU, {html.escape(other)}, {html.escape(phase)}: "
                     f"{html.escape(text)}</li>")
    return ("<h3>Lock against lock under overcommit</h3><p>Each two locks of the same other axis values "
            "and host condition: the faster one's throughput over the slower one's, with its 95 % Welch "
            "interval; it beats the other where the interval lies above 1 (all pairs, every overcommit "
            f"level: pairs.csv).</p><ul>{''.join(items)}</ul>")


def _per_cell_html(plan: dict, rows: list) -> str:
    """Per cell and phase: throughput (mean and interval), long waits behind a preempted holder
    per second (the verdict's), spin cycles per acquisition (the repetitions' mean)."""
    axes = [a["key"] for a in plan["axes"]]
    body = []
    for r in rows:
        for phase, reps in r.get("reps", {}).items():
            t = r["phases"].get(phase, {})
            lw = reps.get("lhp_waits_per_s") or {}
            spin = reps.get("spin_per_acquisition") or []
            thr = _num(t.get("throughput"))
            if t.get("throughput_low") is not None and t.get("throughput_high") is not None:
                thr += f" [{t['throughput_low']:.0f}, {t['throughput_high']:.0f}]"
            lhp = _num(lw.get("mean"), "{:.2f}")
            if lw.get("low") is not None and lw.get("high") is not None:
                lhp += f" [{lw['low']:.2f}, {lw['high']:.2f}]"
            share = speedup.mean(reps.get("holder_off_spin_share") or [])
            mix = reps.get("causes")
            mix_text = ("" if not mix else
                        f"{mix['holder-preempted']:.0%} / {mix['waiter-preempted']:.0%} / {mix['both']:.0%} "
                        f"<small>(n = {mix['n']})</small>")
            body.append("<tr>" + "".join(f"<td>{html.escape(str(r['values'][k]))}</td>" for k in axes)
                        + f"<td>{html.escape(phase)}</td><td>{thr}</td><td>{lhp}</td>"
                        f"<td>{'' if share is None else f'{share:.1%}'}</td><td>{mix_text}</td>"
                        f"<td>{_num(speedup.mean(reps.get('pv_halts_per_s') or []))}</td>"
                        f"<td>{_num(speedup.mean(reps.get('pv_kicks_per_s') or []))}</td>"
                        f"<td>{_num(sum(spin) / len(spin) if spin else None)}</td></tr>")
    head = "".join(f"<th>{html.escape(k)}</th>" for k in axes)
    return (f"<h3>Per cell</h3><table><tr>{head}<th>host condition</th><th>acquisitions/s [95 % interval]</th>"
            "<th>long waits behind a preempted holder per s [95 %]</th><th>share of spin behind a preempted holder</th>"
            "<th>long waits: holder- / waiter- / both preempted</th><th>halts per s</th><th>kicks per s</th>"
            "<th>spin cycles per acquisition</th></tr>"
            f"{''.join(body)}</table>")


def _img(path: str) -> str:
    with open(path, "rb") as f:
        return f"<img src='data:image/png;base64,{base64.b64encode(f.read()).decode()}'>"


def write(root: str, plan: dict, rows: list) -> str:
    os.makedirs(os.path.join(root, "figures"), exist_ok=True)
    share = share_figure(plan, rows, os.path.join(root, "figures", "share_waits_ge_2^20.png"))
    thr = throughput_figure(rows, os.path.join(root, "figures", "throughput.png"))
    done = sum(r["state"] == "complete" for r in rows)
    axes = "; ".join(f"{a['key']} = {', '.join(a['values'])}" for a in plan["axes"])
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>sweep {html.escape(plan['name'])}</title>
<style>body{{font-family:sans-serif;margin:1.5em}}table{{border-collapse:collapse;font-size:90%}}
td,th{{border:1px solid #ccc;padding:3px 6px;text-align:right}}img{{max-width:100%}}</style></head><body>
<h1>Sweep {html.escape(plan['name'])}</h1>
<p>{done} of {len(rows)} cells complete. Axes: {html.escape(axes)}. Each cell's state links to its report;
figures per cell and phase are in sweep.csv.</p>
{table_html(plan, rows)}
{speedup_html(plan, rows)}
<h2>Long waits across the axes</h2>{_img(share)}
<h2>Throughput by host condition</h2>{_img(thr)}
</body></html>
"""
    path = os.path.join(root, "sweep.html")
    with open(path, "w") as f:
        f.write(page)
    return path
