"""Call stacks of a run's traces, per phase: `spinlab-collect trace stacks` (the one writer of the
folded stacks and of the table of call sites) sums the repetitions of each phase
(snapshots/<phase>-r<rep>.trace) into <outdir>/stacks/<phase>/: waits.folded (contended spinlock
waits, weighted by wait cycles), profile.folded (profile samples) — the format flame-graph tools
read — and sites.tsv, the top lock call sites by total wait with their stacks, which the report
shows as a table. Frames are named from the kernel ELF and initrd the guest booted: the
environment's SPINLAB_KERNEL_ELF / SPINLAB_INITRD, else the run's own (spec.ini's [vm] kernel and
initrd), else the source tree's build/kernel, else the installed PREFIX/share/spinlab/kernel.
`spinlab-collect trace stacks` warns when the ELF is not the build the trace names."""
import configparser
import os
import re
import subprocess

from .trace_columns import find_collect

_HERE = os.path.dirname(os.path.realpath(__file__))


def _spec_files(spec_text: str | None) -> tuple:
    """[vm] kernel and initrd of a run's spec.ini ('' when the run used the default)."""
    if not spec_text:
        return "", ""
    p = configparser.ConfigParser(interpolation=None)
    try:
        p.read_string(spec_text)
    except configparser.Error:
        return "", ""
    return p.get("vm", "kernel", fallback="").strip(), p.get("vm", "initrd", fallback="").strip()


def symbol_files(spec_text: str | None = None) -> tuple:
    """(kernel ELF, initrd) to name frames with, the first that exists of: the environment's
    SPINLAB_KERNEL_ELF / SPINLAB_INITRD, the run's spec.ini, the source tree's build/kernel, the
    installed share/spinlab/kernel; None for one not found."""
    run_kernel, run_initrd = _spec_files(spec_text)
    dirs = [os.path.join(_HERE, "..", "..", "build", "kernel"), os.path.join(_HERE, "..", "..", "kernel")]

    def first(env: str, run_file: str, name: str):
        for f in [os.environ.get(env), run_file] + [os.path.join(d, name) for d in dirs]:
            if f and os.path.exists(f):
                return os.path.normpath(f)
        return None

    return first("SPINLAB_KERNEL_ELF", run_kernel, "spinlab.elf"), first("SPINLAB_INITRD", run_initrd, "initrd.tar")


def phase_of(path: str) -> str:
    name = os.path.basename(path)
    m = re.match(r"(.+)-r\d+\.trace$", name)
    return m[1] if m else name.rsplit(".", 1)[0]


def read_sites(path: str) -> list:
    rows = []
    for line in open(path).read().splitlines()[1:]:
        f = line.split("\t")
        rows.append({"rank": int(f[0]), "events": int(f[1]), "contended": int(f[2]), "total_wait": int(f[3]),
                     "max_wait": int(f[4]), "classes": f[5], "frames": f[6:]})
    return rows


def run(files: list, outdir: str, top: int = 10, spec_text: str | None = None) -> list:
    """[{phase, dir, sites, error}] for the phases of these trace files; spec_text: the run's
    spec.ini, naming the kernel and initrd it booted."""
    phases = {}
    for f in files:
        phases.setdefault(phase_of(f), []).append(f)
    kernel, initrd = symbol_files(spec_text)
    out = []
    for phase, fs in sorted(phases.items()):
        d = os.path.join(outdir, "stacks", phase)
        cmd = [find_collect(), "trace", "stacks", *fs, "-o", d, "--top", str(top)]
        if kernel:
            cmd += ["--kernel", kernel]
        if initrd:
            cmd += ["--initrd", initrd]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            out.append({"phase": phase, "dir": d, "sites": [], "error": r.stderr.strip()})
            continue
        warnings = [line.split("warning: ", 1)[1] for line in r.stderr.splitlines() if "warning: " in line]
        out.append({"phase": phase, "dir": d, "sites": read_sites(os.path.join(d, "sites.tsv")), "error": None,
                    "named_with": kernel, "warnings": warnings})
    return out


def blocks(results: list, hz: float = None) -> list:
    out = []
    for p in results:
        if p["error"]:
            out.append(("p", f"Call stacks of phase {p['phase']}: not made: {p['error']}"))
            continue
        if not p["sites"]:
            continue  # recorded without stacks
        frames = lambda r: " ← ".join(r["frames"][:12]) + (" ← …" if len(r["frames"]) > 12 else "")  # noqa: E731
        out += [("h2", f"Lock call sites with stacks: {p['phase']}"),
                ("p", f"The top {len(p['sites'])} call stacks of spinlock events by total wait (TSC cycles), "
                      f"all repetitions of the phase; frames innermost first, named from "
                      f"{p.get('named_with') or 'nothing (no kernel ELF found: addresses)'}. Folded stacks for "
                      f"flame graphs: {os.path.join(p['dir'], 'waits.folded')} (waits) and "
                      f"{os.path.join(p['dir'], 'profile.folded')} (profile samples)."),
                *[("p", f"Warning: {w}") for w in p.get("warnings", [])],
                ("table", ["#", "events", "contended", "total wait", "max wait", "classes", "stack"],
                 [[str(r["rank"]), str(r["events"]), str(r["contended"]), str(r["total_wait"]), str(r["max_wait"]),
                   r["classes"], frames(r)] for r in p["sites"]])]
    return out
