"""A real sweep through Snakemake: two tiny cells on the real guest, interrupted after the first
cell, resumed (only the missing cell runs), then aggregated. About 1-2 minutes under TCG."""
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
SWEEP = os.path.join(HERE, "..", "spinlab-sweep")
RUN = os.path.join(REPO, "build", "host", "bin", "spinlab-run")

TINY = """\
[vm]
cpus = 2
memory = 128
accel = tcg
[workload]
program = lockbench
args = --threads-per-cpu 1 --locks 1 --pattern same --cs-cycles 200 --think-cycles 200 --duration-ms 0
kmix = off
[run]
phases = idle-host
duration = 2
warmup = 0
repetitions = 1
clock-samples = 2
timeline = off
[sweep]
id = tiny
vm.lock = tas, ticket
"""


def vms_left(run_dir, wait_s=30):
    """QEMU processes of this test's VMs (their state lives in run_dir) still there after wait_s."""
    deadline = time.time() + wait_s
    while True:
        found = subprocess.run(["pgrep", "-f", f"qemu-system-x86_64 .*{run_dir}/"], capture_output=True,
                               text=True).stdout.split()
        if not found or time.time() > deadline:
            return found
        time.sleep(0.5)


@pytest.fixture
def tiny(tmp_path):
    if not os.access(RUN, os.X_OK):
        pytest.fail(f"{RUN} is missing: run 'make build' first")
    spec = tmp_path / "tiny.ini"
    spec.write_text(TINY)
    run_dir = tempfile.mkdtemp(prefix="sw-")  # short: VM sockets live there
    os.environ["SPINLAB_RUN_DIR"] = run_dir
    yield str(spec), str(tmp_path / "results"), run_dir
    del os.environ["SPINLAB_RUN_DIR"]
    shutil.rmtree(run_dir, ignore_errors=True)


def sweep(spec, out, **kw):
    return subprocess.Popen([sys.executable, SWEEP, spec, "--output", out], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, **kw)


def test_interrupted_sweep_resumes_with_the_missing_cell_and_aggregates(tiny):
    spec, out, run_dir = tiny
    root = os.path.join(out, "sweep-tiny")
    cells = os.path.join(root, "cells")
    first = sweep(spec, out, start_new_session=True)
    deadline = time.time() + 300
    done = []
    while time.time() < deadline and first.poll() is None:
        done = [f for f in os.listdir(cells)] if os.path.isdir(cells) else []
        done = [f[:-5] for f in done if f.endswith(".done")]
        if done:
            break
        time.sleep(0.2)
    assert done, f"no cell finished within 300 s: {first.communicate()[0][-2000:]}"
    other = ({"lock-tas", "lock-ticket"} - set(done)).pop()
    # Interrupt once the other cell's spinlab-run is running (Snakemake has then recorded the
    # first as finished; a Ctrl-C before that leaves the first incomplete, and a resume rightly
    # reruns it). Its results directory tells: the log file alone did not, under load the cell's
    # Python had not started a second later, and that Ctrl-C was lost (the sweep finished, exit 0).
    while time.time() < deadline and not os.path.isdir(os.path.join(cells, other)):
        time.sleep(0.1)
    os.killpg(first.pid, signal.SIGINT)  # Ctrl-C, as a user would
    log = first.communicate(timeout=120)[0]
    assert first.returncode != 0, log[-2000:]
    assert len(done) == 1
    assert not os.path.exists(os.path.join(cells, f"{other}.done"))
    assert not vms_left(run_dir), "the interrupted sweep left a VM running"
    marker_mtime = os.path.getmtime(os.path.join(cells, f"{done[0]}.done"))

    second = sweep(spec, out)
    log = second.communicate(timeout=400)[0]
    assert second.returncode == 0, log[-3000:]
    assert f"run-cell . {other}" in log and f"run-cell . {done[0]}" not in log, "the resume reran a done cell"
    assert os.path.getmtime(os.path.join(cells, f"{done[0]}.done")) == marker_mtime
    with open(os.path.join(root, "sweep.csv")) as f:
        rows = {r["cell"]: r for r in csv.DictReader(f)}
    assert set(rows) == {"lock-tas", "lock-ticket"}
    for r in rows.values():
        assert r["state"] == "complete"
        assert float(r["idle-host:throughput"]) > 0
    for c in ("lock-tas", "lock-ticket"):
        with open(os.path.join(cells, c, "meta.json")) as f:
            assert json.load(f)["lock"] == c.split("-")[1]
    assert "2 of 2 cells complete" in open(os.path.join(root, "sweep.html")).read()


@pytest.mark.parametrize("name, first_line", [("sweep-locks.ini", "sweep locks: 8 cells"),
                                               ("mitigations.ini", "sweep mitigations: 48 cells")])
def test_shipped_sweep_specs_are_accepted_by_the_runner(name, first_line, tmp_path):
    """Each cell of the sweeps the project ships passes spinlab-run's own checks (--dry-run)."""
    if not os.access(RUN, os.X_OK):
        pytest.fail(f"{RUN} is missing: run 'make build' first")
    spec = os.path.join(REPO, "experiments", name)
    r = subprocess.run([sys.executable, SWEEP, spec, "--dry-run", "--output", str(tmp_path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith(first_line), r.stdout[:300]


FREEZES = """\
[vm]
cpus = 2
accel = tcg
[run]
phases = idle-host, {phase}
{key}-period-ms = 100
[sweep]
id = freezes
run.{key}-vcpus = 0, 1
"""


@pytest.mark.parametrize("key, phase", [("freeze", "freeze-30ms"), ("preempt", "preempt-30ms")],
                         ids=["names", "old-names"])
def test_a_freeze_sweep_in_the_new_or_the_old_names_is_accepted_by_the_runner(key, phase, tmp_path):
    """Issue 53: run.freeze-period-ms, run.freeze-vcpus and freeze-Nms, and a sweep spec written
    before it in their old names (run.preempt-*, preempt-Nms), pass spinlab-run's --dry-run."""
    if not os.access(RUN, os.X_OK):
        pytest.fail(f"{RUN} is missing: run 'make build' first")
    spec = tmp_path / "freezes.ini"
    spec.write_text(FREEZES.format(key=key, phase=phase))
    r = subprocess.run([sys.executable, SWEEP, str(spec), "--dry-run", "--output", str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("sweep freezes: 2 cells"), r.stdout[:300]
    assert f"--run.{key}-vcpus 1" in r.stdout
