"""Plan a sweep into its directory and run it through Snakemake (locally or on Slurm).

The plan (sweep.json) holds each cell's exact commands, so the Snakefile is the same small file
for every sweep: one `cell` rule instance per cell and an `aggregate` rule. Locally one job runs
at a time (`--cores 1`): a cell needs the host to itself. With Slurm each cell is a job of its
own with `--exclusive`, so no two cells share a node.
"""
import fcntl
import json
import os
import pwd
import shlex
import subprocess
import sys

from . import layout

SNAKEFILE = '''\
# Written by spinlab-sweep; the cells and their commands are in sweep.json.
configfile: "sweep.json"

CELLS = list(config["cells"])
SWEEP = config["sweep_command"]

localrules: all, aggregate

# The markers too: an aggregate written after a failed cell must not make the sweep look done.
rule all:
    input: expand("cells/{cell}.done", cell=CELLS), "sweep.csv", "sweep.html"

rule cell:
    output: "cells/{cell}.done"
    log: "logs/{cell}.log"
    threads: 1
    resources:
        runtime=config["slurm"]["runtime_min"],
        mem_mb=config["slurm"]["mem_mb"],
        slurm_extra="--exclusive",
    shell: SWEEP + " run-cell . {wildcards.cell} > {log} 2>&1"

rule aggregate:
    input: expand("cells/{cell}.done", cell=CELLS)
    output: "sweep.csv", "sweep.html"
    shell: SWEEP + " aggregate ."
'''


def cell_commands(spec, cell, root: str, tools: dict) -> dict:
    """The cell's spinlab-run and spinlab-report commands, as argument lists."""
    run = [tools["run"], "--spec", os.path.join(root, "base.ini"), *cell.overrides(),
           "--output.dir", os.path.join(root, "cells"), "--output.run-id", cell.id]
    report = [tools["report"], layout.cell_dir(root, cell.id)]
    return {"values": cell.values, "run": run, "report": report}


def plan(spec, root: str, tools: dict, cell_report: bool = True, runtime_min: int = 120) -> dict:
    """The sweep as it will run: written as sweep.json, shown by --dry-run."""
    root = os.path.abspath(root)
    return {
        "format": layout.FORMAT,
        "name": spec.name,
        "axes": [{"key": a.key, "values": a.values} for a in spec.axes],
        "cells": {c.id: cell_commands(spec, c, root, tools) for c in spec.cells},
        "cell_report": cell_report,
        "sweep_command": " ".join(shlex.quote(p) for p in tools["sweep"]),
        "slurm": {"runtime_min": runtime_min, "mem_mb": 2048},
    }


def write(spec, root: str, the_plan: dict) -> None:
    """Create the sweep directory. An existing one must be this same sweep (a resume)."""
    os.makedirs(os.path.join(root, "cells"), exist_ok=True)
    os.makedirs(os.path.join(root, "logs"), exist_ok=True)
    path = os.path.join(root, "sweep.json")
    if os.path.exists(path):
        old = layout.read_plan(root)
        if old["cells"].keys() != the_plan["cells"].keys() or old["axes"] != the_plan["axes"]:
            raise SystemExit(f"spinlab-sweep: {root} holds a different sweep (other axes or cells): "
                             f"give another --id or --output")
    with open(path, "w") as f:
        json.dump(the_plan, f, indent=1)
        f.write("\n")
    with open(os.path.join(root, "base.ini"), "w") as f:
        f.write(spec.base_text)
    with open(os.path.join(root, "Snakefile"), "w") as f:
        f.write(SNAKEFILE)


def snakemake_command(root: str, slurm: bool, jobs: int, slurm_partition: str | None,
                      status_every: float = 30.0) -> list:
    """status_every: with slurm, seconds between Snakemake's checks of its jobs (sacct). Its Slurm
    executor turns any rate above one check a second into one every 33 s, so a finished cell
    waits up to that long to be seen; a rate at or below one a second is kept as given."""
    cmd = ["snakemake", "--snakefile", os.path.join(root, "Snakefile"), "--directory", root,
           "--rerun-incomplete", "--keep-going", "--printshellcmds"]
    if slurm:
        cmd += ["--slurm", "--jobs", str(jobs),
                "--max-status-checks-per-second", f"{1 / status_every:g}"]
        if slurm_partition:
            cmd += ["--default-resources", f"slurm_partition={slurm_partition}"]
    else:
        cmd += ["--cores", "1"]
    return cmd + ["all"]


def _clear_stale_lock(root: str, env: dict) -> None:
    """Snakemake's own lock outlives a Ctrl-C or a killed parent; we hold ours, so it is stale."""
    locks = os.path.join(root, ".snakemake", "locks")
    if os.path.isdir(locks) and os.listdir(locks):
        print(f"spinlab-sweep: removing the stale Snakemake lock of an interrupted sweep in {root}", flush=True)
        subprocess.call(["snakemake", "--snakefile", os.path.join(root, "Snakefile"), "--directory", root,
                         "--unlock", "--quiet"], env=env, stdout=subprocess.DEVNULL)


def run_snakemake(root: str, slurm: bool, jobs: int, slurm_partition: str | None,
                  status_every: float = 30.0) -> int:
    """Run the workflow; one spinlab-sweep at a time per sweep directory."""
    guard = open(os.path.join(root, ".spinlab-sweep.lock"), "w")
    try:
        fcntl.flock(guard, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"spinlab-sweep: another spinlab-sweep is running on {root}", file=sys.stderr)
        return 2
    cmd = snakemake_command(root, slurm, jobs, slurm_partition, status_every)
    print("spinlab-sweep:", " ".join(shlex.quote(p) for p in cmd), flush=True)
    # Snakemake's Slurm executor reads $USER to look up accounts; batch shells may not set it.
    env = dict(os.environ)
    env.setdefault("USER", pwd.getpwuid(os.getuid()).pw_name)
    try:
        _clear_stale_lock(root, env)
        return subprocess.call(cmd, env=env)
    except FileNotFoundError:
        print("spinlab-sweep: snakemake is not installed (Debian package 'snakemake'; scripts/deps.sh installs it)",
              file=sys.stderr)
        return 127
