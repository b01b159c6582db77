"""The --slurm path against a real Slurm: a one-node cluster started here (slurm_cluster.py),
the tiny sweep submitted with --slurm, every cell an exclusive job; the aggregate must match what
the local path produces. Run by `make test-slurm` (and .ci/run)."""
import csv
import os
import subprocess
import sys

import pytest

from slurm_cluster import SlurmCluster

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
from test_sweep_local import RUN, SWEEP, TINY  # noqa: E402


@pytest.fixture
def cluster():
    c = SlurmCluster()
    try:
        yield c.start()
    finally:
        c.stop()


def test_sweep_runs_every_cell_as_an_exclusive_slurm_job(cluster, tmp_path):
    if not os.access(RUN, os.X_OK):
        pytest.fail(f"{RUN} is missing: run 'make build' first")
    spec = tmp_path / "tiny.ini"
    spec.write_text(TINY)
    out = str(tmp_path / "results")
    r = subprocess.run([sys.executable, SWEEP, str(spec), "--output", out, "--slurm", "--jobs", "2",
                        "--runtime-min", "10", "--slurm-status-every", "2"], env=cluster.env, capture_output=True, text=True, timeout=900)
    log = r.stdout + r.stderr
    assert r.returncode == 0, log[-4000:] + cluster.logs()
    submitted = [line for line in log.splitlines() if "has been submitted with SLURM jobid" in line]
    assert len(submitted) == 2, log[-3000:]
    jobs = subprocess.run(["scontrol", "show", "job", "-o"], env=cluster.env, capture_output=True, text=True).stdout
    cell_jobs = [j for j in jobs.splitlines() if "JobName=" in j and "OverSubscribe=NO" in j]
    # --exclusive shows as OverSubscribe=NO (a job submitted without it says OverSubscribe=OK)
    assert len(cell_jobs) >= 2, jobs
    assert all("JobState=COMPLETED" in j for j in cell_jobs), jobs
    root = os.path.join(out, "sweep-tiny")
    with open(os.path.join(root, "sweep.csv")) as f:
        rows = {row["cell"]: row for row in csv.DictReader(f)}
    assert set(rows) == {"lock-tas", "lock-ticket"}
    for row in rows.values():
        assert row["state"] == "complete" and float(row["idle-host:throughput"]) > 0
    assert "2 of 2 cells complete" in open(os.path.join(root, "sweep.html")).read()
