"""results/index.html: every run in a results directory, newest first, with links to its report.

One row per run directory (one holding meta.json): date, spec, phases, state, the report's
verdict in one line (from its summary.json, written with report.html), and a link to report.html; then the
--compare reports found there. spinlab-report rewrites it after every report, so it lists what
is on disk at that moment; a run without a report yet is listed as such.
"""
import html
import json
import os
import re

from . import verdict
from .reader import Meta

INDEX = "index.html"


def _json(path):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


def spec_name(spec_text: str | None) -> str:
    """The spec a run came from, from spec.ini's first line '(from PATH)'; '' when not said."""
    m = re.search(r"\(from ([^)]+)\)", (spec_text or "").split("\n", 1)[0])
    return os.path.splitext(os.path.basename(m[1]))[0] if m else ""


def _vs(r: dict | None, base: str, conf: float) -> str:
    """'8.04× idle-host (p = 0.001)', with ', not significant' when it is not."""
    r = r or {}
    out = f"{verdict.g3(r.get('ratio'))}\u00d7 {base}"
    sig = verdict.significant(r, conf)
    if sig is not None:
        out += f" (p = {r['p']:.3f}{'' if sig else ', not significant'})"
    return out


def verdict_line(summary: dict | None) -> str:
    """The report's verdict (summary.json "verdict", verdict.py) in one line: per phase against
    the baseline, the headline first (cycles spun behind preempted holders as a ratio with its
    test, the share of vCPU time spinning on kernel locks, the share of attributable long waits
    with a preempted holder), then the secondary rate of waits >= 2^20 and the throughput change.
    A summary written before the headline existed gives the secondary figures alone."""
    if not summary:
        return "no report yet"
    v = summary.get("verdict")
    if not isinstance(v, dict) or not v.get("phases"):
        return "no verdict in summary.json"
    base, conf = v.get("baseline_phase"), v.get("confidence", 0.95)
    parts = []
    for phase, p in v["phases"].items():
        if phase == base:
            continue
        if p.get("status") == "missing":
            parts.append(f"{phase}: missing")
            continue
        bits = []
        cyc = (p.get("lhp_spin") or {}).get("cycles_per_vcpu_second") or {}
        if cyc:
            bits.append(f"spin behind preempted holders {_vs(cyc.get('vs_baseline'), base, conf)}")
        kernel = ((p.get("kernel_spin") or {}).get("share") or {}).get("mean")
        if kernel is not None:
            bits.append(f"kernel-lock spin {verdict.g3(100 * kernel)}% of vCPU time")
        lhp = p.get("lhp") or {}
        if lhp.get("share") is not None:
            bits.append(f"holder preempted {100 * lhp['share']:.0f}%")
        secondary = [f"waits \u2265 2^{v.get('long_k', 20)} {_vs((p.get('per_second') or {}).get('vs_baseline'), base, conf)}"]
        t = p.get("throughput") or {}
        if t.get("change_pct") is not None:
            secondary.append(f"throughput {t['change_pct']:+.0f}%")
        parts.append(f"{phase}: " + ", ".join(bits) + ("; secondary: " if bits else "") + ", ".join(secondary))
    return "; ".join(parts) or f"only the baseline ({base})"


def run_row(results: str, name: str) -> dict | None:
    d = os.path.join(results, name)
    recorded = _json(os.path.join(d, "meta.json"))
    if recorded is None:
        return None
    meta = Meta.from_json(recorded)
    status = _json(os.path.join(d, "status.json")) or {}
    try:
        with open(os.path.join(d, "spec.ini"), encoding="utf-8") as f:
            spec_text = f.readline()
    except OSError:
        spec_text = None
    has_report = os.path.isfile(os.path.join(d, "report.html"))
    return {"run": name, "date": str(meta.date or ""), "spec": spec_name(spec_text),
            "phases": ", ".join(map(str, meta.phases or [])),
            "state": str(status.get("state") or "unknown"),
            "verdict": verdict_line(_json(os.path.join(d, "summary.json")) if has_report else None),
            "report": f"{name}/report.html" if has_report else None}


def rows(results: str) -> tuple[list, list]:
    """(runs, comparisons) found in results, newest first; `latest` (a link) is skipped."""
    runs, compares = [], []
    for name in sorted(os.listdir(results), reverse=True):
        d = os.path.join(results, name)
        if name == "latest" or os.path.islink(d) or not os.path.isdir(d):
            continue
        row = run_row(results, name)
        if row:
            runs.append(row)
        elif os.path.isfile(os.path.join(d, "report.html")):
            compares.append({"name": name, "report": f"{name}/report.html"})
    runs.sort(key=lambda r: (r["date"], r["run"]), reverse=True)
    return runs, compares


def render(runs: list, compares: list) -> str:
    e = html.escape
    out = ["<!doctype html><html><head><meta charset='utf-8'><title>spinlab runs</title>",
           "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
           "td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}"
           "th{background:#eee}</style></head><body>",
           f"<h1>spinlab runs</h1><p>{len(runs)} run(s), newest first.</p>",
           "<table><tr><th>run</th><th>date</th><th>spec</th><th>phases</th><th>state</th>"
           "<th>verdict</th></tr>"]
    for r in runs:
        link = f"<a href='{e(r['report'])}'>{e(r['run'])}</a>" if r["report"] else e(r["run"])
        out.append(f"<tr><td>{link}</td><td>{e(r['date'])}</td><td>{e(r['spec']) or '—'}</td>"
                   f"<td>{e(r['phases'])}</td><td>{e(r['state'])}</td><td>{e(r['verdict'])}</td></tr>")
    out.append("</table>")
    if compares:
        out.append("<h2>Comparisons</h2><ul>")
        out += [f"<li><a href='{e(c['report'])}'>{e(c['name'])}</a></li>" for c in compares]
        out.append("</ul>")
    out.append("</body></html>\n")
    return "\n".join(out)


def write(results: str) -> str:
    """Rewrite results/index.html (atomically); returns its path."""
    path = os.path.join(results, INDEX)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(render(*rows(results)))
    os.replace(tmp, path)
    return os.path.abspath(path)
