import subprocess

import pytest

from conftest import BASIC, TOOL
from spinlab_report.cli import cycles_arg


def tool(*args):
    return subprocess.run(["/usr/bin/python3", TOOL, *args], capture_output=True, text=True, timeout=60)


def test_help_ends_with_examples():
    p = tool("--help")
    assert p.returncode == 0
    tail = p.stdout.rstrip().splitlines()
    examples = tail.index("EXAMPLES:")
    assert all(line.startswith("  spinlab-report") for line in tail[examples + 1:])


def test_threshold_forms():
    assert cycles_arg("2^22") == 4194304 and cycles_arg("1048576") == 2 ** 20 and cycles_arg("0x100") == 256
    with pytest.raises(Exception, match="not a cycle count"):
        cycles_arg("lots")


@pytest.mark.parametrize("args, needle", [(["--long-wait-threshold", "0"], "must be at least 1 cycle"),
                                          (["--threshold", "0"], "must be at least 1 cycle"),  # its old name
                                          (["--confidence", "95"], "not a confidence level"),
                                          (["--baseline", "nope"], "--baseline nope: no such phase")])
def test_bad_options_name_what_was_wrong(args, needle, tmp_path):
    p = tool(BASIC, "--out", str(tmp_path), *args)
    assert p.returncode == 2 and needle in p.stderr
