"""Shared by the labs' tests: the labs package and the analysis package beside them on sys.path (as
`spinlab lab` puts them on PYTHONPATH), the source tree's tools, and copies of
results directories that a test may edit (never the originals). A SIGTERM (a CI timeout, `kill`)
ends the session like Ctrl-C, so a running `spinlab-run` is killed with its test (its own
children, QEMU and the hogs, die with it: PR_SET_PDEATHSIG)."""
import json
import os
import shutil
import signal
import sys

LABS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(LABS)
BIN = os.path.join(ROOT, "build", "host", "bin")
DATA = os.path.join(LABS, "tests", "data")
sys.path.insert(0, LABS)
sys.path.insert(1, os.path.join(ROOT, "analysis"))


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


signal.signal(signal.SIGTERM, _interrupt)


def copy_run(src: str, dst: str) -> str:
    shutil.copytree(src, dst, symlinks=True)
    return dst


def replace_phase(run_dir: str, phase: str, with_phase: str):
    """Make phase's snapshots copies of with_phase's (same repetitions), relabelled: a run in which
    the host condition of `phase` never took effect, measured for real on the other phase."""
    snaps = os.path.join(run_dir, "snapshots")
    for name in sorted(os.listdir(snaps)):
        if name.startswith(phase + "-r") and name.endswith(".json"):
            rep = name[len(phase) + 2:-5]
            with open(os.path.join(snaps, f"{with_phase}-r{rep}.json")) as f:
                doc = json.load(f)
            doc["phase"] = phase
            with open(os.path.join(snaps, name), "w") as f:
                json.dump(doc, f)


def swap_snapshots(results: str, into: str, frm: str):
    """into's snapshots become copies of frm's (file names kept): into's lock made frm's counts."""
    snaps = os.path.join(results, into, "snapshots")
    for name in os.listdir(snaps):
        shutil.copy(os.path.join(results, frm, "snapshots", name), os.path.join(snaps, name))


def by_name(observations) -> dict:
    return {o.name: o for o in observations}
