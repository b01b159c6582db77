"""Shared fixtures: the hand-made run (tests/data/run-basic) and throw-away copies to damage."""
import os
import shutil
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # import spinlab_report from analysis/
# ... and the tools the tests start (bench/make_synthetic_run.py) through PYTHONPATH, as a user's shell would
os.environ["PYTHONPATH"] = os.pathsep.join([os.path.dirname(HERE)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
BASIC = os.path.join(HERE, "data", "run-basic")
EXPECTED = os.path.join(HERE, "data", "expected")
TOOL = os.path.join(os.path.dirname(HERE), "spinlab-report")


@pytest.fixture
def run_copy(tmp_path):
    """A writable copy of run-basic, for tests that remove or break files."""
    dst = tmp_path / "run"
    shutil.copytree(BASIC, dst)
    return dst


@pytest.fixture(scope="session")
def basic_report(tmp_path_factory):
    """run-basic's full report, generated once into a temporary directory."""
    from spinlab_report import reader, report, summary
    out = tmp_path_factory.mktemp("basic-report")
    paths = report.generate(reader.load_run(BASIC), str(out), summary.Options())
    return out, paths
