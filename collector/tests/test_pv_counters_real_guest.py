"""`spinlab-collect query` shows lock=pvqspin's halts and kicks from a real guest.

One TCG boot on 2 vCPUs with lock=pvqspin and the smallest spin bound (pvqspin-spin=1: a kernel
waiter halts its vCPU after one spin, and its release kicks it; kernel-patch/README.md) under
lockbench, whose ring-3 pvqspin waiters sleep in the kernel and so contend for its locks. Every
format must then carry the per-CPU counters that the shared region holds (perfdata.h
PvLockCounters; collector/report_format.h says where each format puts them). Needs `make
build`; QEMU runs TCG, so no KVM is needed.
"""
import json
import subprocess
import time

from real_guest import COLLECT, lockbench_guest

PV_COUNTS = ("pv_halts", "pv_kicks", "pv_spurious_wakeups", "pv_steals")


def query(g, fmt):
    r = subprocess.run([COLLECT, "query", "--format", fmt, "--vm", g["name"], "--run-dir", g["run_dir"]],
                       env=g["env"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"query --format {fmt}: exit {r.returncode}: {r.stderr}"
    return r.stdout


def test_query_shows_pvqspin_halts_and_kicks_in_every_format():
    with lockbench_guest("pv", boot_options="lock=pvqspin pvqspin-spin=1") as g:
        # Halts need contention, which under TCG comes when the host gives it: the deadline only
        # catches a guest that never halts (or a query that never shows it).
        deadline = time.time() + 60
        while True:
            doc = json.loads(query(g, "json"))
            if "pv" in doc and doc["pv"]["merged"]["pv_halts"] + doc["pv"]["merged"]["pv_kicks"] > 0:
                break
            assert time.time() < deadline, f"no pv halts or kicks within 60 s: {doc.get('pv')}"
            time.sleep(0.5)
        pv = doc["pv"]
        assert [c["cpu"] for c in pv["per_cpu"]] == [0, 1]
        for k in PV_COUNTS:  # merged is the sum of the CPUs of the same reading
            assert pv["merged"][k] == sum(c[k] for c in pv["per_cpu"]), k
        # The counters only grow, so the later readings in the other formats show them too.
        table = query(g, "table")
        head = [l for l in table.splitlines() if l.startswith("pv lock")]
        assert head and head[0].split()[3:] == list(PV_COUNTS), table
        all_row = [l for l in table.splitlines() if l.startswith("all 2 CPUs")]
        assert all_row and sum(int(x) for x in all_row[0].split()[3:5]) > 0, table
        rows = [l.split(",") for l in query(g, "csv").splitlines()[1:]]
        csv = {(r[0], r[3]): int(r[5]) for r in rows if r[1] == "" and r[3].startswith("pv_")}
        assert {m for _, m in csv} == set(PV_COUNTS) and {c for c, _ in csv} == {"all", "0", "1"}, csv
        assert csv[("all", "pv_halts")] + csv[("all", "pv_kicks")] > 0, csv
