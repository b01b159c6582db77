"""`spinlab lab`: list the labs, run a lab's experiment, check results against its worksheet.

    spinlab lab list
    spinlab lab start N [--out DIR] [--no-report] [--only RUN,...] [-- SPINLAB-RUN OPTIONS...]
    spinlab lab check N RESULTS

`start` runs the lab's spinlab-run invocation(s) (registry.RUNS, each with --spec the lab's
lab.ini) into DIR/labN-<name>-<date>/ (DIR: results), then spinlab-report on each run, and
prints the directory and the check command. Options after `--` go to every spinlab-run (a
shorter run: `-- --run.duration 4 --run.repetitions 1`). `--only` runs some of a lab's runs
(labs 3 and 5 have several: `--only student,verify` after changing lab 5's lock); copy the
others' folders in from an earlier start before `check`.

`check` prints, for each expected observation of the worksheet, whether the results show it
and, when not, why not, in plain words. Exit status: 0 every observation shown, 1 some not
shown, 2 a bad command line or results the lab cannot be checked on (the message says why), or
the status of a spinlab-run / spinlab-report that failed (start).

The tools run are those beside the `spinlab` front-end that called main() (bindir).
"""
import datetime
import os
import subprocess
import sys
import textwrap

from . import registry
from .observe import LabInputError

USAGE = """usage: spinlab lab list
       spinlab lab start N [--out DIR] [--no-report] [--only RUN,...] [-- SPINLAB-RUN OPTIONS...]
       spinlab lab check N RESULTS
"""


def _err(msg: str) -> int:
    print(f"spinlab lab: {msg}", file=sys.stderr)
    return 2


def _lab(arg: str, labs_dir: str):
    """(lab, None) or (None, exit status after a message naming the bad number)."""
    numbers = [x.number for x in registry.labs(labs_dir)]
    if not arg.isdigit() or int(arg) not in numbers:
        return None, _err(f"no lab '{arg}': the labs are {', '.join(map(str, numbers))} (spinlab lab list)")
    return registry.lab(int(arg), labs_dir), None


def cmd_list(labs_dir: str) -> int:
    for lab in registry.labs(labs_dir):
        m = lab.module
        print(f"{lab.number}  {m.TITLE}")
        print(textwrap.fill(m.GOAL, 96, initial_indent="   ", subsequent_indent="   "))
        print(f"   worksheet: {lab.worksheet}")
        print(f"   time: {m.MINUTES} on 2 cores under TCG")
    print("\nspinlab lab start N runs lab N's experiment; spinlab lab check N RESULTS checks its results.")
    return 0


def _parse_start(args: list):
    """(out, report, only, runner options) of `start`'s arguments after N; ValueError on a bad one.
    only: the run names given to --only, or None (every run)."""
    out, report, only, extra = "results", True, None, []
    if "--" in args:
        i = args.index("--")
        args, extra = args[:i], args[i + 1:]
    it = iter(args)
    for a in it:
        if a == "--out":
            out = next(it, None)
            if not out:
                raise ValueError("--out needs a directory")
        elif a == "--no-report":
            report = False
        elif a == "--only":
            names = next(it, None)
            if not names:
                raise ValueError("--only needs run names, e.g. --only student,verify")
            only = [n for n in names.split(",") if n]
        else:
            raise ValueError(f"unknown option '{a}' for start (runner options go after '--')")
    return out, report, only, extra


def _selected(lab, only):
    """The lab's RUNS, or those named in only; ValueError naming a run the lab does not have."""
    if only is None:
        return list(lab.module.RUNS)
    names = [r[0] for r in lab.module.RUNS]
    if names == [None]:
        raise ValueError(f"lab {lab.number} has a single run: --only is for labs with several")
    unknown = [n for n in only if n not in names]
    if unknown:
        raise ValueError(f"lab {lab.number} has no run '{unknown[0]}': its runs are {', '.join(names)}")
    return [r for r in lab.module.RUNS if r[0] in only]


def _run(cmd: list) -> int:
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd).returncode


def _vm_run(bindir: str, out_dir: str, name: str, opts: list) -> int:
    """spinlab-vm run NAME with opts, its console kept as out_dir/console.log."""
    os.makedirs(out_dir, exist_ok=True)
    return _run([os.path.join(bindir, "spinlab-vm"), "run", name, "--quiet",
                 "--save-console", os.path.join(out_dir, "console.log"), *opts])


def cmd_start(lab, args: list, bindir: str) -> int:
    try:
        out, report, only, extra = _parse_start(args)
        selected = _selected(lab, only)
    except ValueError as e:
        return _err(str(e))
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    top = os.path.join(out, f"lab{lab.number}-{lab.slug}-{stamp}")
    runs = []
    for sub, opts, *kind in selected:
        if kind == ["vm"]:
            # a failing boot (a broken student lock) is for `check` to explain, not a reason to stop
            rc = _vm_run(bindir, os.path.join(top, sub), f"lab{lab.number}-{sub}", opts)
            if rc != 0:
                print(f"spinlab lab: note: the {sub} boot ended with exit {rc}; its console: "
                      f"{os.path.join(top, sub, 'console.log')}")
            continue
        out_dir, run_id = (out, os.path.basename(top)) if sub is None else (top, sub)
        rc = _run([os.path.join(bindir, "spinlab-run"), "--spec", lab.spec, "--output.dir", out_dir,
                   "--output.run-id", run_id, *opts, *extra])
        if rc not in (0, 1):  # 1: partial, still worth a report and a check
            _err(f"spinlab-run failed (exit {rc}) for lab {lab.number}"
                 f"{'' if sub is None else ' run ' + sub}; see the message above")
            return rc
        runs.append(os.path.join(out_dir, run_id))
    if report:
        for r in runs:
            rc = _run([os.path.join(bindir, "spinlab-report"), r])
            if rc != 0:
                _err(f"spinlab-report failed (exit {rc}) on {r}")
                return rc
    print(f"\nlab {lab.number} results: {top}")
    print(f"next: spinlab lab check {lab.number} {top}")
    return 0


def cmd_check(lab, results: str) -> int:
    try:
        observations = lab.module.check(results)
    except LabInputError as e:
        return _err(f"lab {lab.number}: {e}")
    shown = sum(o.shown for o in observations)
    print(f"lab {lab.number} ({lab.module.TITLE}) on {results}:")
    for i, o in enumerate(observations, 1):
        mark = "shown    " if o.shown else "NOT shown"
        print(f"  {i}. [{mark}] {o.name}")
        print(textwrap.fill(f"expected: {o.expected}", 96, initial_indent="        ", subsequent_indent="          "))
        print(textwrap.fill(("seen: " if o.shown else "why not: ") + o.why, 96,
                            initial_indent="        ", subsequent_indent="          "))
    print(f"{shown} of {len(observations)} expected observations shown")
    return 0 if shown == len(observations) else 1


def main(argv: list, bindir: str, labs_dir: str = registry.LABS_DIR) -> int:
    try:
        return _main(argv, bindir, labs_dir)
    except BrokenPipeError:  # `spinlab lab list | head`: the reader has gone, nothing is wrong
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except PermissionError as e:  # e.g. a results directory this user may not write
        _err(f"permission denied: {e.filename or e}")
        return 2


def _main(argv: list, bindir: str, labs_dir: str) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        (sys.stdout if argv else sys.stderr).write(USAGE)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "list":
        return cmd_list(labs_dir) if not rest else _err("list takes no arguments")
    if cmd not in ("start", "check"):
        return _err(f"'{cmd}' is not a lab command (list, start, check)\n{USAGE}")
    if not rest:
        return _err(f"{cmd} needs a lab number\n{USAGE}")
    lab, status = _lab(rest[0], labs_dir)
    if lab is None:
        return status
    if cmd == "start":
        return cmd_start(lab, rest[1:], bindir)
    if len(rest) != 2:
        return _err(f"check needs the lab number and one results directory\n{USAGE}")
    return cmd_check(lab, rest[1])
