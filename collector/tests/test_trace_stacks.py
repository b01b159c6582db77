"""`spinlab-collect trace stacks` and `trace dump --stacks` on a script-made trace (no guest): the
folded stacks of waits and profile samples, the table of lock call sites by total wait, and a
reference whose definition was lost counted as lost, never resolved to another stack."""
import os
import subprocess

from trace_export_check import make_trace
from real_guest import COLLECT

HERE = os.path.dirname(os.path.abspath(__file__))


def folded(path):
    return dict(line.rsplit(" ", 1) for line in open(path).read().splitlines())


def test_folded_stacks_and_sites_from_references_walks_and_a_lost_definition(tmp_path):
    t = make_trace(os.path.join(HERE, "traces", "stacks.txt"), str(tmp_path / "s.trace"))
    out = str(tmp_path / "st")
    r = subprocess.run([COLLECT, "trace", "stacks", t, "-o", out], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "(1 lost)" in r.stdout
    # Outermost first; no symbols given, so addresses. Only contended waits weigh.
    assert folded(os.path.join(out, "waits.folded")) == {"0xb0;0xa0": "150", "[stack lost]": "7", "0xd0": "20"}
    assert folded(os.path.join(out, "profile.folded")) == {"0xb0;0xa0": "1"}
    rows = [line.split("\t") for line in open(os.path.join(out, "sites.tsv")).read().splitlines()[1:]]
    assert [r[:6] + [" ".join(r[6:])] for r in rows] == [
        ["1", "2", "2", "150", "100", "3", "0xa0 0xb0"],
        ["2", "1", "1", "20", "20", "4", "0xd0"],
        ["3", "1", "1", "7", "7", "4", "[stack lost]"],
        ["4", "1", "0", "0", "0", "4", "0xc0"],
    ]


def test_dump_stacks_prints_each_stack_under_its_event_and_the_lost_one_as_lost(tmp_path):
    t = make_trace(os.path.join(HERE, "traces", "stacks.txt"), str(tmp_path / "s.trace"))
    r = subprocess.run([COLLECT, "trace", "dump", t, "--stacks"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    lost = [i for i, line in enumerate(lines) if "LOST" in line]
    assert len(lost) == 1 and "key=0x9" in lines[lost[0]]
    assert " wait_cycles=7 " in [l for l in lines[:lost[0]] if not l.startswith("#")][-2]  # its event, then its ref
    assert "# stacks: 4 by reference, 1 inline, 1 lost" in r.stdout
    i = lines.index(next(l for l in lines if l.startswith("#   stack key=0x2 ")))
    assert lines[i + 1].startswith("#     0 0xd0 ")  # from the delete: the definition was lost
