"""The `spinlab` front-end: dispatch to the tool beside it, help, version, closest match."""
import os
import shutil
import stat
import subprocess

import pytest

SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "spinlab.in")


@pytest.fixture
def bindir(tmp_path):
    """A bin/ holding the front-end and a spinlab-run that prints what it was given."""
    text = open(SOURCE).read().replace("@SPINLAB_VERSION@", "9.8.7 (git abc)")
    (tmp_path / "spinlab").write_text(text)
    (tmp_path / "spinlab-run").write_text('#!/bin/sh\necho "argv0=$0"; for a; do echo "arg=$a"; done\nexit 7\n')
    for f in ("spinlab", "spinlab-run"):
        (tmp_path / f).chmod(stat.S_IRWXU)
    return tmp_path


def spinlab(bindir, *args, cwd=None):
    return subprocess.run([str(bindir / "spinlab"), *args], capture_output=True, text=True, cwd=cwd)


def test_subcommand_runs_the_tool_beside_it_with_the_arguments_and_its_status(bindir, tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    r = spinlab(bindir, "run", "--spec", "a b", "--run.duration", "4", cwd=other)
    assert r.returncode == 7
    assert r.stdout.splitlines() == [f"argv0={bindir}/spinlab-run", "arg=--spec", "arg=a b",
                                     "arg=--run.duration", "arg=4"]


def test_found_through_path_it_still_runs_its_own_tools(bindir, tmp_path):
    env = dict(os.environ, PATH=f"{bindir}:/usr/bin:/bin")
    r = subprocess.run(["spinlab", "run"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 7 and r.stdout.startswith(f"argv0={bindir}/spinlab-run")


def test_unknown_subcommand_names_the_closest(bindir):
    r = spinlab(bindir, "rpeort")
    assert r.returncode == 2
    assert "'rpeort' is not a spinlab command; did you mean 'spinlab report'?" in r.stderr
    r = spinlab(bindir, "zzzzzz")
    assert r.returncode == 2 and "did you mean" not in r.stderr and "spinlab help" in r.stderr


def test_missing_tool_is_a_clear_error(bindir):
    r = spinlab(bindir, "load", "hog")
    assert r.returncode == 127
    assert r.stderr.strip() == (f"spinlab: 'load' needs spinlab-load, which is not installed beside "
                                f"spinlab (no {bindir}/spinlab-load)")


def test_trace_is_the_collectors_trace_subcommand(bindir):
    (bindir / "spinlab-collect").write_text('#!/bin/sh\necho "argv0=$0"; for a; do echo "arg=$a"; done\n')
    (bindir / "spinlab-collect").chmod(stat.S_IRWXU)
    r = spinlab(bindir, "trace", "dump", "f.trace")
    assert r.returncode == 0
    assert r.stdout.splitlines() == [f"argv0={bindir}/spinlab-collect", "arg=trace", "arg=dump", "arg=f.trace"]


def test_help_lists_every_subcommand_and_version(bindir):
    r = spinlab(bindir, "help")
    assert r.returncode == 0
    for cmd in ("run", "report", "collect", "load", "vm", "trace", "selftest", "sweep", "version", "help"):
        assert f"\n  {cmd} " in r.stdout
    assert spinlab(bindir, "version").stdout == "spinlab 9.8.7 (git abc)\n"
    none = spinlab(bindir)
    assert none.returncode == 2 and "Usage: spinlab COMMAND" in none.stderr


def test_help_of_a_subcommand_is_the_tools_help(bindir):
    r = spinlab(bindir, "help", "run")
    assert r.stdout.splitlines()[1:] == ["arg=--help"]


def test_completion_offers_subcommands(bindir):
    script = os.path.join(os.path.dirname(SOURCE), "spinlab.bash")
    out = subprocess.run(["bash", "-c", f"source {script}; COMP_WORDS=({bindir}/spinlab se); COMP_CWORD=1; "
                          "_spinlab; echo ${COMPREPLY[*]}"], capture_output=True, text=True).stdout
    assert out.split() == ["selftest"]


def test_completion_offers_the_lab_commands_and_numbers(bindir):
    script = os.path.join(os.path.dirname(SOURCE), "spinlab.bash")

    def complete(*words):
        line = " ".join(words)
        return subprocess.run(["bash", "-c", f"source {script}; COMP_WORDS=({bindir}/spinlab {line}); "
                               f"COMP_CWORD={len(words)}; _spinlab; echo ${{COMPREPLY[*]}}"],
                              capture_output=True, text=True).stdout.split()
    assert complete("la") == ["lab"]
    assert complete("lab", "ch") == ["check"]
    assert complete("lab", "start", "") == ["1", "2", "3", "4", "5"]


# ---- spinlab lab: the classroom labs (labs/spinlab_labs/cli.py) ---------------------------------
LABS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "labs")
RECORDED_LAB3 = os.path.join(LABS, "tests", "data", "lab3")


def lab(bindir, *args, labs=LABS, cwd=None):
    env = dict(os.environ)
    env.pop("SPINLAB_LABS", None)
    if labs:
        env["SPINLAB_LABS"] = labs
    return subprocess.run([str(bindir / "spinlab"), "lab", *args], capture_output=True, text=True, env=env, cwd=cwd)


@pytest.fixture
def recording_tools(bindir, tmp_path):
    """spinlab-run and spinlab-report beside the front-end that append their argv to calls.txt
    (one line per call, arguments separated by '|'); spinlab-run exits with $FAKE_RUN_EXIT."""
    calls = tmp_path / "calls.txt"
    for tool in ("spinlab-run", "spinlab-report"):
        (bindir / tool).write_text(f'#!/bin/sh\nIFS="|"; echo "$(basename $0)|$*" >> {calls}\n'
                                   + ('exit ${FAKE_RUN_EXIT:-0}\n' if tool == "spinlab-run" else ""))
        (bindir / tool).chmod(stat.S_IRWXU)
    return calls


def test_lab_list_names_every_lab_with_its_worksheet(bindir):
    r = lab(bindir, "list")
    assert r.returncode == 0, r.stderr
    for n, title in ((1, "Measuring spin-locks"), (2, "Lock-holder preemption"), (3, "Lock algorithms under overcommit"),
                     (4, "Tracing and call stacks"), (5, "Write your own lock")):
        assert f"\n{n}  {title}" in "\n" + r.stdout
    assert os.path.join(LABS, "3-locks-under-overcommit", "README.md") in r.stdout
    assert "\n  lab " in spinlab(bindir, "help").stdout


def test_lab_start_runs_the_labs_spec_into_results_then_the_report(bindir, tmp_path, recording_tools):
    r = lab(bindir, "start", "2", "--out", str(tmp_path / "res"), "--", "--run.duration", "4", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    run, report = [c.split("|") for c in recording_tools.read_text().splitlines()]
    assert run[:7] == ["spinlab-run", "--spec", os.path.join(LABS, "2-lock-holder-preemption", "lab.ini"),
                       "--output.dir", str(tmp_path / "res"), "--output.run-id", run[6]]
    assert run[6].startswith("lab2-lock-holder-preemption-") and run[7:] == ["--run.duration", "4"]
    assert report == ["spinlab-report", str(tmp_path / "res" / run[6])]
    assert f"spinlab lab check 2 {tmp_path / 'res' / run[6]}" in r.stdout


def test_lab3_start_runs_each_lock_into_a_folder_of_its_own(bindir, tmp_path, recording_tools):
    r = lab(bindir, "start", "3", "--out", str(tmp_path), "--no-report", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    calls = [c.split("|") for c in recording_tools.read_text().splitlines()]
    assert [c[0] for c in calls] == ["spinlab-run"] * 4  # --no-report: no spinlab-report
    top = calls[0][4]
    assert os.path.dirname(top) == str(tmp_path) and os.path.basename(top).startswith("lab3-locks-under-overcommit-")
    assert [(c[4], c[6], c[7:]) for c in calls] == [(top, lock, ["--vm.lock", lock]) for lock in ("tas", "ticket", "mcs", "pv")]


def test_lab_start_stops_at_a_failed_run_with_its_status(bindir, tmp_path, recording_tools):
    env_run = dict(os.environ, SPINLAB_LABS=LABS, FAKE_RUN_EXIT="3")
    r = subprocess.run([str(bindir / "spinlab"), "lab", "start", "1", "--out", str(tmp_path)], capture_output=True,
                       text=True, env=env_run, cwd=tmp_path)
    assert r.returncode == 3
    assert "spinlab-run failed (exit 3) for lab 1" in r.stderr
    assert len(recording_tools.read_text().splitlines()) == 1  # no report of a run that failed


def test_lab_check_says_what_is_shown_and_why_not(bindir, tmp_path):
    good = lab(bindir, "check", "3", RECORDED_LAB3)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "4 of 4 expected observations shown" in good.stdout and "NOT shown" not in good.stdout
    edited = tmp_path / "lab3"
    shutil.copytree(RECORDED_LAB3, edited)
    for f in (edited / "ticket" / "snapshots").iterdir():  # ticket made as many acquisitions as tas
        shutil.copy(edited / "tas" / "snapshots" / f.name, f)
    bad = lab(bindir, "check", "3", str(edited))
    assert bad.returncode == 1
    assert "[NOT shown] ticket" in bad.stdout and "no collapse" in bad.stdout
    assert "3 of 4 expected observations shown" in bad.stdout


def test_lab_bad_input_is_named(bindir, tmp_path):
    r = lab(bindir, "check", "9", str(tmp_path))
    assert r.returncode == 2 and "no lab '9': the labs are 1, 2, 3, 4, 5" in r.stderr
    r = lab(bindir, "check", "1", str(tmp_path / "nowhere"))
    assert r.returncode == 2 and "is not a spinlab results directory" in r.stderr and "nowhere" in r.stderr
    r = lab(bindir, "check", "1", os.path.join(RECORDED_LAB3, "tas"))
    assert r.returncode == 2 and "no snapshot of phase(s) idle-host" in r.stderr
    r = lab(bindir, "start", "1", "--bogus")
    assert r.returncode == 2 and "unknown option '--bogus'" in r.stderr
    r = lab(bindir, "frobnicate")
    assert r.returncode == 2 and "'frobnicate' is not a lab command" in r.stderr


def test_lab_without_labs_installed_is_a_clear_error(bindir):
    r = lab(bindir, "list", labs=None)
    assert r.returncode == 127 and "'lab' needs the labs, which are not installed beside spinlab" in r.stderr
