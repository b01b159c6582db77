"""The report's call stacks (spinlab_report.trace_stacks): the repetitions of a phase summed by
`spinlab-collect trace stacks` into stacks/<phase>/{waits,profile}.folded and the table of lock
call sites by total wait, whose stacks name real kernel functions: the trace is written by the
real writer (build/host/bin/trace_script) with frames at addresses of the built kernel, taken
from binutils' nm. Needs `make build`."""
import os
import subprocess

import pytest

from spinlab_report import trace_stacks

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.join(HERE, "..", "..", "build", "host", "bin")
KDIR = os.path.join(HERE, "..", "..", "build", "kernel")


def nm(path):
    out = {}
    for line in subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True, check=True).stdout.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "Tt":
            out[f[2]] = int(f[0], 16)
    return out


@pytest.fixture(scope="module")
def phase_traces(tmp_path_factory):
    elf = os.path.join(KDIR, "spinlab64.elf")
    if not os.path.exists(elf):
        pytest.fail(f"{elf} missing: run `make kernel` first")
    s = nm(elf)
    inner, outer = s["_Z22spin_unlock_irqrestoreP8Spinlockm"] + 4, s["_Z10sched_tickv"] + 0x20
    d = tmp_path_factory.mktemp("run")
    script = d / "p.txt"
    script.write_text(f"""config cpus=1
1000 0 5 1 spinlock lock_address=0x1000 class_id=1 wait_cycles=300 flags=1 rules=2
1000 0 5 1 stack-def key=1 depth=2 frames={inner:#x},{outer:#x}
1000 0 5 1 stack-ref key=1 event_type=1 event_tsc=1000 depth=2
2000 0 5 1 spinlock lock_address=0x1000 class_id=1 wait_cycles=5 flags=1 rules=2
2000 0 5 1 stack-walk event_type=1 event_tsc=2000 depth=1 frames={outer:#x}
3000 0 5 1 profile instruction_pointer={inner:#x}
3000 0 5 1 stack-ref key=1 event_type=6 event_tsc=3000 depth=2
""")
    files = []
    for rep in (0, 1):
        out = str(d / f"lockbench-r{rep}.trace")
        subprocess.run([os.path.join(BIN, "trace_script"), str(script), out], check=True)
        files.append(out)
    return files, str(d / "report")


def test_a_phase_sums_its_repetitions_into_folded_stacks_and_named_call_sites(phase_traces):
    files, outdir = phase_traces
    [p] = trace_stacks.run(files, outdir)
    assert p["phase"] == "lockbench" and p["error"] is None
    assert p["sites"][0]["frames"] == ["spin_unlock_irqrestore", "sched_tick"]
    assert (p["sites"][0]["events"], p["sites"][0]["total_wait"], p["sites"][0]["max_wait"]) == (2, 600, 300)
    assert p["sites"][1]["frames"] == ["sched_tick"] and p["sites"][1]["total_wait"] == 10
    waits = open(os.path.join(outdir, "stacks", "lockbench", "waits.folded")).read().splitlines()
    assert sorted(waits) == ["sched_tick 10", "sched_tick;spin_unlock_irqrestore 600"]
    profile = open(os.path.join(outdir, "stacks", "lockbench", "profile.folded")).read().splitlines()
    assert profile == ["sched_tick;spin_unlock_irqrestore 2"]
    blocks = trace_stacks.blocks([p])
    table = next(b for b in blocks if b[0] == "table")
    assert table[2][0][6] == "spin_unlock_irqrestore ← sched_tick"


def test_phase_names_come_from_the_trace_file_names():
    assert trace_stacks.phase_of("/x/snapshots/base-line-r12.trace") == "base-line"
    assert trace_stacks.phase_of("one.trace") == "one"


def test_frames_are_named_from_the_kernel_the_run_booted(tmp_path, monkeypatch):
    monkeypatch.delenv("SPINLAB_KERNEL_ELF", raising=False)
    monkeypatch.delenv("SPINLAB_INITRD", raising=False)
    own, other = tmp_path / "own.elf", tmp_path / "other.elf"
    own.write_bytes(b"\x7fELF"), other.write_bytes(b"\x7fELF")
    rd = tmp_path / "own.tar"
    rd.write_bytes(b"")
    spec = f"# the spec as run\n[vm]\ncpus = 2\nkernel = {own}\ninitrd = {rd}\n\n[run]\nphases = idle-host\n"
    assert trace_stacks.symbol_files(spec) == (str(own), str(rd))
    # The environment wins over the run's spec.
    monkeypatch.setenv("SPINLAB_KERNEL_ELF", str(other))
    assert trace_stacks.symbol_files(spec)[0] == str(other)
    monkeypatch.delenv("SPINLAB_KERNEL_ELF")
    # A run that used the default kernel (kernel = empty), or one whose file is gone, falls back
    # to the source tree's or the installed kernel, never to the missing file.
    for text in (spec.replace(str(own), ""), spec.replace(str(own), str(tmp_path / "gone.elf")), None):
        assert trace_stacks.symbol_files(text)[0] != str(own)
        assert trace_stacks.symbol_files(text)[0] in (None, *[
            os.path.normpath(os.path.join(os.path.dirname(trace_stacks.__file__), "..", "..", d, "spinlab.elf"))
            for d in ("build/kernel", "kernel")])
