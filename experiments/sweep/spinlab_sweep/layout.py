"""The sweep directory: where everything of one sweep lives, written down once.

    results/sweep-<id>/
      sweep.json          the sweep as planned: name, axes, cells and their commands
      base.ini            the spec without [sweep]: what every cell runs
      Snakefile           the workflow (one rule instance per cell, then aggregation)
      cells/<cell>/       each cell's results directory (analysis/README.md), report included
      cells/<cell>.done   written when the cell completed; a resume skips such cells
      cells/<cell>.interrupted-N/   an earlier partial attempt, kept, never analysed
      logs/<cell>.log     the cell's spinlab-run and spinlab-report output
      sweep.csv, sweep.html, figures/   the aggregate
"""
import json
import os

FORMAT = 1


def sweep_dir(output: str, name: str) -> str:
    return os.path.join(output, f"sweep-{name}")


def cell_dir(root: str, cell: str) -> str:
    return os.path.join(root, "cells", cell)


def done_marker(root: str, cell: str) -> str:
    return os.path.join(root, "cells", f"{cell}.done")


def log_path(root: str, cell: str) -> str:
    return os.path.join(root, "logs", f"{cell}.log")


def read_plan(root: str) -> dict:
    path = os.path.join(root, "sweep.json")
    try:
        with open(path) as f:
            plan = json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit(f"spinlab-sweep: cannot read {path}: {e}")
    if plan.get("format") != FORMAT:
        raise SystemExit(f"spinlab-sweep: {path} has format {plan.get('format')!r}, expected {FORMAT}")
    return plan
