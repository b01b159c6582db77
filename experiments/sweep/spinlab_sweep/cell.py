"""Run one cell of a planned sweep: `spinlab-run` with the cell's overrides, then its report.

This is what each Snakemake job executes (`spinlab-sweep run-cell DIR CELL`). A cell is done
only when its run completed: then `cells/<cell>.done` is written and a resumed sweep skips it.
An earlier partial attempt is moved aside (`cells/<cell>.interrupted-N/`), never deleted.
"""
import json
import os
import signal
import subprocess
import sys
import time

from . import layout


def _move_aside(path: str) -> str | None:
    if not os.path.lexists(path):
        return None
    n = 1
    while os.path.lexists(f"{path}.interrupted-{n}"):
        n += 1
    os.rename(path, f"{path}.interrupted-{n}")
    return f"{path}.interrupted-{n}"


def _run_forwarding_signals(cmd: list) -> int:
    """Run cmd; SIGINT/SIGTERM sent to us reach it, and we wait for it to clean up."""
    child = subprocess.Popen(cmd)
    previous = {}

    def forward(signum, _frame):
        if child.poll() is None:
            child.send_signal(signum)

    for s in (signal.SIGINT, signal.SIGTERM):
        previous[s] = signal.signal(s, forward)
    try:
        return child.wait()
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def run_state(cell_dir: str) -> str:
    """The run's state from its status.json (complete, partial), or missing."""
    try:
        with open(os.path.join(cell_dir, "status.json")) as f:
            return json.load(f).get("state", "unknown")
    except (OSError, ValueError):
        return "missing"


def run_cell(root: str, cell_id: str) -> int:
    plan = layout.read_plan(root)
    cells = plan["cells"]
    if cell_id not in cells:
        print(f"spinlab-sweep: no cell '{cell_id}' in {root}/sweep.json (cells: {', '.join(cells)})",
              file=sys.stderr)
        return 2
    cell = cells[cell_id]
    out = layout.cell_dir(root, cell_id)
    marker = layout.done_marker(root, cell_id)
    if os.path.exists(marker):
        os.remove(marker)
    aside = _move_aside(out)
    if aside:
        print(f"spinlab-sweep: earlier attempt of {cell_id} kept as {aside}", flush=True)
    t0 = time.time()
    status = _run_forwarding_signals(cell["run"])
    state = run_state(out)
    if os.path.exists(os.path.join(out, "meta.json")) and plan.get("cell_report", True):
        report = subprocess.call(cell["report"])
        if report != 0:
            print(f"spinlab-sweep: the report of {cell_id} failed (exit {report})", file=sys.stderr)
    if status == 0 and state == "complete":
        with open(marker, "w") as f:
            json.dump({"format": layout.FORMAT, "cell": cell_id, "state": state,
                       "seconds": round(time.time() - t0, 1)}, f)
            f.write("\n")
        return 0
    print(f"spinlab-sweep: cell {cell_id} is {state} (spinlab-run exit {status}); a resumed sweep runs it again",
          file=sys.stderr)
    return status or 1
