"""spinlab-sweep: run a matrix of experiments (a sweep spec) through Snakemake, locally or on Slurm."""
import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

from . import cell, layout, spec, workflow

HERE = os.path.dirname(os.path.abspath(__file__))
# In a source tree this is experiments/sweep/spinlab_sweep/, the tools are in build/host/bin and
# analysis/; installed it is PREFIX/share/spinlab/sweep/spinlab_sweep/, the tools in PREFIX/bin.
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
PREFIX = os.path.normpath(os.path.join(HERE, "..", "..", "..", ".."))
SPEC_DIRS = [os.path.join(REPO, "experiments"), os.path.join(PREFIX, "share", "spinlab", "experiments")]

EPILOG = """\
A sweep spec is an experiment spec (see `spinlab-run --help`) plus a [sweep] section whose keys
are runner options and whose values are the axis values, comma-separated:
    [sweep]
    vm.lock = tas, ticket, mcs, pv
    vm.cpus = 2, 4
A key without a dot is a set axis: each of its values names a section [sweep.KEY.VALUE] of
SECTION.KEY = value lines, the options that value changes together:
    [sweep]
    workload = kmix, lockbench
    [sweep.workload.kmix]
    workload.program = kmix
    workload.throughput-classes = proc_table,address_space,pmm,heap
    [sweep.workload.lockbench]
    workload.program = lockbench
Every combination is a cell: an ordinary spinlab-run with those options on its command line
(--dry-run prints each command, so a cell can be rerun by hand). Every cell is checked by the
runner's own validation (spinlab-run --dry-run) before anything runs.

Locally the cells run one at a time (an LHP measurement needs the host to itself); an
interrupted sweep, run again with the same spec, runs only the cells that are missing or
partial. --slurm submits each cell as an exclusive Slurm job (Snakemake's Slurm executor; the
results directory must be on a file system the nodes share).

Results: OUTPUT/sweep-ID/ with cells/<cell>/ (each a results directory with its report),
sweep.csv (one row per cell) and sweep.html (a table per cell and figures across the axes).
A sweep with a vm.lock axis that includes ticket also gets speedup.csv and, in sweep.html, the
speedup of each lock over ticket per overcommit level (vCPUs per host CPU) and host condition,
with 95 % intervals, in the form of Ouyang and Lange, VEE'13 (experiments/mitigations.ini), and
per cell the share of spin behind a preempted holder, the long waits' cause mix, halts and kicks
per second, and the measured order of the locks under overcommit beside published figures.
A sweep with a vm.lock axis gets pairs.csv: every two locks against each other (the faster one's
throughput over the slower one's, its interval, whether the interval lies above 1), and sweep.html
lists which lock beats which under overcommit.

exit status: 0 every cell complete; 1 some cell failed or is partial (the aggregate is written
anyway and says so); 2 a bad spec or option.

EXAMPLES:
  spinlab-sweep experiments/sweep-locks.ini --dry-run
  spinlab-sweep experiments/sweep-locks.ini
  spinlab-sweep experiments/sweep-locks.ini --slurm --jobs 8 --slurm-partition lab
  spinlab-sweep mitigations            # the shipped experiments/mitigations.ini: the speedup table
"""


def _first_executable(*paths):
    return next((p for p in paths if p and os.access(p, os.X_OK)), None)


def default_tools() -> dict:
    run = _first_executable(os.path.join(REPO, "build", "host", "bin", "spinlab-run"),
                            os.path.join(PREFIX, "bin", "spinlab-run"), shutil.which("spinlab-run"))
    report = _first_executable(os.path.join(REPO, "analysis", "spinlab-report"),
                               os.path.join(PREFIX, "bin", "spinlab-report"), shutil.which("spinlab-report"))
    sweep = os.path.join(os.path.dirname(HERE), "spinlab-sweep")
    return {"run": run, "report": report, "sweep": [sys.executable, sweep]}


def find_spec(name: str) -> str:
    """A spec path as given, else a spec of that name among the shipped ones (sweep-locks)."""
    if os.path.exists(name) or os.sep in name:
        return name
    for d in SPEC_DIRS:
        for candidate in (os.path.join(d, name), os.path.join(d, name + ".ini")):
            if os.path.exists(candidate):
                return candidate
    return name


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="spinlab-sweep", description=__doc__, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("spec", help="the sweep spec (an experiment spec with a [sweep] section), a path or the "
                                "name of a shipped one (sweep-locks, mitigations)")
    p.add_argument("--dry-run", action="store_true", help="print the cells and their commands; run nothing")
    p.add_argument("--output", default="results", help="where sweep-ID/ goes (default results)")
    p.add_argument("--id", help="the sweep's name (default: [sweep] id, else the spec file's name)")
    p.add_argument("--slurm", action="store_true", help="submit each cell as an exclusive Slurm job")
    p.add_argument("--jobs", type=int, default=8, help="with --slurm: cells submitted at once (default 8)")
    p.add_argument("--slurm-partition", help="with --slurm: the partition (default: the cluster's default)")
    p.add_argument("--runtime-min", type=int, default=120, help="with --slurm: a cell's time limit (default 120)")
    p.add_argument("--slurm-status-every", type=float, default=30.0, metavar="SECONDS",
                   help="with --slurm: seconds between checks of the cells' jobs (default 30, at least 1; "
                        "a finished cell is seen up to this late)")
    p.add_argument("--no-cell-report", action="store_true", help="skip each cell's spinlab-report: faster, but the sweep's tables and figures are "
                   "read from the cells' reports (summary.json) and stay empty until each cell is "
                   "reported (spinlab-report CELL-DIR, then spinlab-sweep aggregate SWEEP-DIR)")
    p.add_argument("--spinlab-run", help="the runner (default: build/host/bin/spinlab-run, else PATH)")
    p.add_argument("--spinlab-report", help="the report (default: analysis/spinlab-report, else PATH)")
    return p


def validate_cells(the_plan: dict) -> list:
    """Run each cell's command with --dry-run: the runner's own checks. Returns the refusals."""
    refusals = []
    for cid, c in the_plan["cells"].items():
        r = subprocess.run(c["run"] + ["--dry-run"], capture_output=True, text=True)
        if r.returncode != 0:
            msg = (r.stderr.strip() or r.stdout.strip()).splitlines()
            refusals.append(f"cell {cid}: {msg[0] if msg else f'spinlab-run exit {r.returncode}'}")
    return refusals


def do_aggregate(root: str) -> int:
    # Imported here: the analysis (numpy, pandas, matplotlib) takes ~1 s to import, and `run-cell`,
    # which Snakemake starts once per cell, needs none of it (48 s of the mitigation study).
    from . import aggregate, speedup, sweep_html
    the_plan, rows = aggregate.collect(root)
    aggregate.write_csv(os.path.join(root, "sweep.csv"), the_plan, rows)
    if speedup.applies(the_plan):
        speedup.write_csv(os.path.join(root, "speedup.csv"), speedup.table(the_plan, rows))
    pairs = speedup.pairs(the_plan, rows)
    if pairs:
        speedup.write_pairs_csv(os.path.join(root, "pairs.csv"), pairs)
    page = sweep_html.write(root, the_plan, rows)
    done = sum(r["state"] == "complete" for r in rows)
    print(f"spinlab-sweep: {done} of {len(rows)} cells complete; {page}")
    return 0 if done == len(rows) else 1


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["run-cell"] and len(argv) == 3:
        return cell.run_cell(argv[1], argv[2])
    if argv[:1] == ["aggregate"] and len(argv) == 2:
        return do_aggregate(argv[1])
    p = parser()
    args = p.parse_args(argv)
    if not args.slurm_status_every >= 1:
        p.error(f"--slurm-status-every {args.slurm_status_every:g}: at least 1 second (Snakemake's Slurm "
                f"executor checks at most once a second)")
    args.spec = find_spec(args.spec)
    try:
        with open(args.spec) as f:
            text = f.read()
        sweep = spec.parse(text, args.id or os.path.splitext(os.path.basename(args.spec))[0])
    except OSError as e:
        print(f"spinlab-sweep: cannot read the spec: {e}", file=sys.stderr)
        return 2
    except spec.SweepError as e:
        print(f"spinlab-sweep: {args.spec}: {e}", file=sys.stderr)
        return 2
    if args.id:
        sweep.name = args.id
    tools = default_tools()
    tools["run"] = args.spinlab_run or tools["run"]
    tools["report"] = args.spinlab_report or tools["report"]
    for what in ("run", "report"):
        if not tools[what] or not os.access(tools[what], os.X_OK):
            print(f"spinlab-sweep: spinlab-{what} not found (build it with 'make build' or give --spinlab-{what})",
                  file=sys.stderr)
            return 2
    root = os.path.abspath(layout.sweep_dir(args.output, sweep.name))
    the_plan = workflow.plan(sweep, root, tools, not args.no_cell_report, args.runtime_min)

    with tempfile.TemporaryDirectory() as tmp:  # validate against a base.ini that exists
        probe = workflow.plan(sweep, tmp, tools)
        with open(os.path.join(tmp, "base.ini"), "w") as f:
            f.write(sweep.base_text)
        refusals = validate_cells(probe)
    if refusals:
        print(f"spinlab-sweep: {args.spec}: the runner refuses {len(refusals)} of {len(sweep.cells)} cells; "
              f"nothing was run:", file=sys.stderr)
        for r in refusals:
            print(f"  {r}", file=sys.stderr)
        return 2

    if args.dry_run:
        print(f"sweep {sweep.name}: {len(sweep.cells)} cells into {root}")
        for cid, c in the_plan["cells"].items():
            print(f"  {cid}: {' '.join(shlex.quote(p) for p in c['run'])}")
        print("  then: " + " ".join(shlex.quote(p) for p in
                                    workflow.snakemake_command(root, args.slurm, args.jobs, args.slurm_partition,
                                                               args.slurm_status_every)))
        return 0

    workflow.write(sweep, root, the_plan)
    status = workflow.run_snakemake(root, args.slurm, args.jobs, args.slurm_partition, args.slurm_status_every)
    agg = do_aggregate(root)
    return 1 if (status != 0 or agg != 0) else 0
