"""spinlab-run on a Linux guest ([vm] guest = linux, experiments/linux.ini): spinlab-vm boots
Debian's kernel with the agent in its region-only mode, and the whole pipeline works as for
spinlab's kernel: the counters from the region, the long waits from a trace session on the
control channel, the workload's own throughput, the timeline, the clock, meta.json's kernel,
and the report's attribution by rule (the holder is the other vCPU at 2 vCPUs).

The attribution is held to what the host knows apart from it: vCPU 1 is frozen 30 ms of every
100 ms (freeze-30ms). A wait on CPU 0 that vCPU 1 was frozen for at least 90 % of (its clock bound
counted against it) had its holder off for most of it, since at 2 vCPUs only vCPU 1 can hold a
lock CPU 0 waits for; nearly all such waits must be classed holder-preempted, and none
holder-running. Fewer than 3 such waits (the host decides how many fall inside a freeze) leave
the share not judged, said so; each one found is still held to it.

Needs build/host/bin/spinlab-run (make) and the fetched guest image. ~40 s on 2 cores."""
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from linux_testlib import guest_image  # noqa: F401  (a fixture)
from spinlab_linux import paths

sys.path.insert(0, str(paths.REPO / "analysis"))  # spinlab_report (tests may set the path)
from spinlab_report import aggregate, attribution, reader, summary, table, verdict, verdict_text  # noqa: E402
from spinlab_report.names import LHP_CLASS as L  # noqa: E402

RUN = paths.REPO / "build" / "host" / "bin" / "spinlab-run"


def spinlab_run(out, *args, timeout=400):
    if not RUN.exists():
        pytest.fail(f"{RUN} is missing: run make first")
    env = dict(os.environ, SPINLAB_RUN_DIR=str(out / "rundir"))
    return subprocess.run([str(RUN), "--spec", "linux", "--output.dir", str(out / "results"), *args],
                          capture_output=True, text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL)


def frozen_spans(run_dir, vcpu):
    """vCPU's frozen intervals in host TSC (the timeline's rows: the freeze injector's record)."""
    with open(run_dir / "timeline.csv") as f:
        return [(int(r["start_host_tsc"]), int(r["end_host_tsc"])) for r in csv.DictReader(f)
                if r["state"] == "frozen" and int(r["vcpu"]) == vcpu]


def test_a_linux_guest_runs_through_spinlab_run_and_its_frozen_holders_are_found(guest_image, tmp_path):
    r = spinlab_run(tmp_path, "--run.phases", "idle-host,freeze-30ms", "--run.freeze-vcpus", "1",
                    "--run.duration", "6", "--run.warmup", "1", "--run.repetitions", "1")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    run_dir = Path(r.stdout.splitlines()[0])
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["guest"] == "linux" and meta["lock"] == "tas" and meta["vcpus"] == 2
    assert meta["guest_kernel"] == f"{guest_image['package']} {guest_image['version']}"
    assert meta["guest_build_id"] == f"linux {guest_image['release']}"
    assert meta["cpu_mapping"].startswith("checked:")
    for phase in ("idle-host", "freeze-30ms"):
        snap = json.loads((run_dir / "snapshots" / f"{phase}-r1.json").read_text())
        assert snap["workload"]["hackbench"]["unit"] == "hackbench runs"
        assert snap["workload"]["hackbench"]["ops"] > 0, snap["workload"]
        assert snap["trace"]["loss"]["events_lost"] == 0
        assert {c for cpu in snap["cpus"] for c in cpu["classes"]} == {"spinlock_slowpath"}
        assert all(w["holder_cpu"] is None and w["lock_class"] == "spinlock_slowpath" for w in snap["long_waits"])
        assert {cpu["acquisitions_counted"] for cpu in snap["cpus"]} == {"contended-only"}

    run = reader.load_run(str(run_dir))
    assert run.holder_rule == "other-vcpu"
    share = attribution.long_waits_share(run.snaps("freeze-30ms"), run.timeline, run.clock, 1 << 20)
    rows = [w for w in share["waits"] if w["host_start"] is not None and w["bound_cycles"] is not None]
    assert rows, "no long wait was placed on the host's axis"
    freezes = frozen_spans(run_dir, 1)
    assert freezes, "the injector froze nothing"
    def frozen_share(w):  # of the wait (placed on the host's axis, its clock bound against it), vCPU 1 frozen
        a0, b0 = w["host_start"] + w["bound_cycles"], w["host_start"] + w["wait_cycles"] - w["bound_cycles"]
        return sum(max(0, min(b, b0) - max(a, a0)) for a, b in freezes) / w["wait_cycles"]
    inside = [w for w in rows if w["cpu"] == 0 and frozen_share(w) >= 0.9]
    classes = [w["cause"] for w in inside]
    # How many of hackbench's slow-path waits fall inside a freeze is the host's doing (ci5: 1 of
    # 16 placed): below 3 the share is not judged, but each one there must still be holder-off.
    if len(inside) < 3:
        print(f"frozen holders: {len(inside)} of {len(rows)} placed waits inside vCPU 1's freezes "
              f"(3 needed): the share is not judged; their classes {classes}")
    preempted = sum(c in (L.kHolderPreempted, L.kBoth) for c in classes)
    assert preempted >= 0.95 * len(inside), classes
    assert L.kNeither not in classes, classes
    # the verdict's words and the throughput's name, as the report prints them (without its figures)
    s = summary.build(run, summary.Options())
    text = "\n".join(verdict.build(run, s)["warnings"] + [verdict_text.paragraph(verdict.build(run, s))])
    assert "the holder is the other vCPU" in text, text
    assert s["phases"]["idle-host"]["throughput"]["metric"] == "hackbench: hackbench runs/s"
    # the log2 wait table the report writes: of the probe's contended acquisitions, said so
    counters = aggregate.counters(run)
    text = table.table_text(counters.totals, counters.repetitions)
    assert text.count("%  of contended acquisitions only\n") == len(run.phases) and "uncontended" not in text, text


def test_what_a_linux_guest_cannot_have_is_refused_before_anything_starts(tmp_path):
    r = spinlab_run(tmp_path, "--vm.lock", "ticket", timeout=60)
    assert r.returncode != 0 and "a Linux guest's lock is mcs" in r.stderr, r.stderr
    r = spinlab_run(tmp_path, "--workload.program", "lockbench", timeout=60)
    assert r.returncode != 0 and "hackbench or forkexec" in r.stderr, r.stderr
