"""The `spinlab` front-end: dispatch to the tool beside it, help, version, closest match."""
import os
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
