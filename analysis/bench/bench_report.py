#!/usr/bin/python3
"""The report-scaling benchmark (`make bench` runs it): spinlab-report on synthetic
results directories (make_synthetic_run.py) at 4, 16 and 64 vCPUs with 10k, 100k and 1M long
waits, 2 phases x 6 repetitions x 60 s each, with traces and timelines.

    bench_report.py [--out build/bench] [--vcpus 4,16,64] [--waits 10000,100000,1000000]

Each report runs as its own process; its wall time and peak resident memory (ru_maxrss of that
process, from wait4) are recorded. The directories are made once and kept under
OUT/synthetic/ (remade when the generator changes). Writes OUT/report-scaling.json and prints a
table. Linearity: per vCPU count, the cost of each added wait between two sizes
((t2 - t1) / (n2 - n1)) should stay within 2x across sizes; the table shows it. Goal: 64 vCPUs
and 1M waits in under 30 s and 2 GB (exit status 1 when missed, with --check).
"""
import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
REPORT = os.path.join(HERE, "..", "spinlab-report")
GENERATOR = os.path.join(HERE, "make_synthetic_run.py")
GOAL_S, GOAL_MB = 30.0, 2048.0


def host_cpu() -> str:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def generator_stamp() -> str:
    with open(GENERATOR, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def ensure_run(base: str, vcpus: int, waits: int, reps: int, duration: int) -> str:
    """The synthetic run for this size, made unless an identical one is already there."""
    d = os.path.join(base, f"{vcpus}v-{waits}w-{reps}x{duration}s")
    stamp = os.path.join(d, ".generator")
    if os.path.exists(stamp) and open(stamp).read() == generator_stamp():
        return d
    shutil.rmtree(d, ignore_errors=True)
    t = time.monotonic()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (os.path.dirname(HERE), os.environ.get("PYTHONPATH")) if p))
    subprocess.run([sys.executable, GENERATOR, d, "--vcpus", str(vcpus), "--long-waits", str(waits),
                    "--reps", str(reps), "--duration", str(duration)], check=True, env=env)
    with open(stamp, "w") as f:
        f.write(generator_stamp())
    print(f"bench-report: made {d} in {time.monotonic() - t:.1f} s", file=sys.stderr)
    return d


def timed_report(run_dir: str, out: str) -> dict:
    """Runs spinlab-report on run_dir into out: wall seconds, peak RSS (MB), exit status."""
    shutil.rmtree(out, ignore_errors=True)
    t = time.monotonic()
    p = subprocess.Popen([sys.executable, REPORT, run_dir, "--out", out],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.monotonic() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        print(f"bench-report: spinlab-report {run_dir} failed ({p.returncode}):\n{err}", file=sys.stderr)
    return {"seconds": round(wall, 3), "max_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "user_s": round(usage.ru_utime, 3), "sys_s": round(usage.ru_stime, 3), "exit": p.returncode}


def slopes(cases: list) -> None:
    """Adds us_per_added_wait: the time each wait added since the next smaller size cost."""
    by_v = {}
    for c in cases:
        by_v.setdefault(c["vcpus"], []).append(c)
    for group in by_v.values():
        group.sort(key=lambda c: c["long_waits"])
        for prev, c in zip(group, group[1:]):
            dn = c["long_waits"] - prev["long_waits"]
            c["us_per_added_wait"] = round((c["seconds"] - prev["seconds"]) / dn * 1e6, 2) if dn else None


def table(cases: list) -> str:
    rows = [f"{'vCPUs':>5} {'long waits':>10} {'report s':>9} {'peak MB':>8} {'µs/wait':>8} {'µs/added wait':>13}"]
    for c in cases:
        added = c.get("us_per_added_wait")
        rows.append(f"{c['vcpus']:>5} {c['long_waits']:>10} {c['seconds']:>9.1f} {c['max_rss_mb']:>8.0f} "
                    f"{c['us_per_wait']:>8.1f} {'—' if added is None else f'{added:.1f}':>13}")
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench"))
    ap.add_argument("--vcpus", default="4,16,64")
    ap.add_argument("--waits", default="10000,100000,1000000")
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--duration", type=int, default=60)
    ap.add_argument("--check", action="store_true", help="exit 1 when the largest case misses the goal")
    a = ap.parse_args()
    try:
        vcpus = [int(x) for x in a.vcpus.split(",")]
        waits = [int(x) for x in a.waits.split(",")]
    except ValueError:
        ap.error(f"--vcpus and --waits take comma-separated integers, not '{a.vcpus}' / '{a.waits}'")
    base = os.path.join(a.out, "synthetic")
    os.makedirs(base, exist_ok=True)
    cases = []
    for v in vcpus:
        for n in waits:
            d = ensure_run(base, v, n, a.reps, a.duration)
            r = timed_report(d, os.path.join(base, "reports", os.path.basename(d)))
            c = {"vcpus": v, "long_waits": n, "repetitions": a.reps, "phases": 2, "duration_s": a.duration, **r,
                 "us_per_wait": round(r["seconds"] / max(n, 1) * 1e6, 2)}
            cases.append(c)
            print(f"bench-report: {v} vCPUs, {n} long waits: {r['seconds']:.1f} s, {r['max_rss_mb']:.0f} MB",
                  file=sys.stderr)
    slopes(cases)
    added = [c["us_per_added_wait"] for c in cases if c.get("us_per_added_wait")]
    largest = max(cases, key=lambda c: (c["vcpus"], c["long_waits"]))
    goal = {"case": f"{largest['vcpus']} vCPUs, {largest['long_waits']} long waits", "seconds_max": GOAL_S,
            "mb_max": GOAL_MB, "met": largest["seconds"] < GOAL_S and largest["max_rss_mb"] < GOAL_MB
            and largest["exit"] == 0}
    result = {"format": 1, "benchmark": "report-scaling", "host_cpu": host_cpu(), "cpus": os.cpu_count(),
              "cases": cases, "goal": goal,
              "added_wait_spread": round(max(added) / min(added), 2) if len(added) > 1 and min(added) > 0 else None}
    with open(os.path.join(a.out, "report-scaling.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(table(cases))
    print(f"goal ({goal['case']} < {GOAL_S:.0f} s, < {GOAL_MB:.0f} MB): {'met' if goal['met'] else 'MISSED'}; "
          f"spread of µs per added wait: {result['added_wait_spread']}x (linear: <= 2x)")
    return 1 if a.check and not goal["met"] else 0


if __name__ == "__main__":
    sys.exit(main())
