"""The project's own host recorders beside a Linux guest: `spinlab-load timeline` (when each
vCPU thread ran, host TSC) and `spinlab-load freeze` (freeze chosen vCPU threads on a schedule,
record each freeze's effective window). See hypervisor-hooks/README.md for both and their CSVs.

Each runs as a child in a process group of its own (a terminal's Ctrl-C reaches only us, and we
stop them in order: freeze first, then timeline, which reads freeze's record when it stops);
spinlab-load keeps its own ledger and cleans up on SIGINT and SIGTERM, and by default stops
when its parent dies, so nothing it froze or created outlives the run. stop() sends SIGINT and
waits, then SIGTERM, then SIGKILL (its guardian still cleans up).
"""
import os
import signal
import subprocess
import time
from pathlib import Path

from . import paths


class HostLoadError(Exception):
    pass


def spinlab_load():
    """build/host/bin/spinlab-load (or $SPINLAB_LOAD)."""
    return Path(os.environ.get("SPINLAB_LOAD") or paths.REPO / "build" / "host" / "bin" /
                "spinlab-load")


def _own_group():
    # Between fork and exec: its own process group, and the signals stop() sends at their
    # defaults, as spinlab-run's children have them (experiments/runner/child.cc): a run started
    # with SIGINT ignored (nohup, a background job of a script) must still reach its recorders.
    os.setpgid(0, 0)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def timeline_argv(qemu_pid, out_csv, ready, freezes_csv=None, binary=None):
    argv = [str(binary or spinlab_load()), "timeline", "--qemu-pid", str(qemu_pid),
            "--out", str(out_csv), "--ready-file", str(ready)]
    if freezes_csv:
        argv += ["--freezes", str(freezes_csv)]
    return argv


def freeze_argv(qemu_pid, vcpus, freeze_ms, period_ms, out_csv, ready, latency_json=None,
                rt_priority=10, binary=None):
    argv = [str(binary or spinlab_load()), "freeze", "--qemu-pid", str(qemu_pid),
            "--vcpus", ",".join(str(v) for v in vcpus), "--freeze-ms", f"{freeze_ms:g}",
            "--period-ms", f"{period_ms:g}", "--out", str(out_csv), "--ready-file", str(ready)]
    if latency_json:
        argv += ["--latency-json", str(latency_json)]
    if rt_priority:
        argv += ["--rt-priority", str(rt_priority)]
    return argv


class Recorder:
    """One spinlab-load child: started, waited for (its --ready-file), stopped."""

    def __init__(self, name, argv, ready, log_path):
        self.name, self.argv, self.ready, self.log_path = name, argv, Path(ready), Path(log_path)
        self.proc = None
        self.returncode = None
        self.ready_text = None

    def start(self):
        if not Path(self.argv[0]).is_file():
            raise HostLoadError(f"no {self.argv[0]} (build the host tools: make)")
        with open(self.log_path, "wb") as log:
            try:
                self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=log, preexec_fn=_own_group)
            except OSError as e:
                raise HostLoadError(f"cannot run {self.argv[0]}: {e.strerror}")

    def is_ready(self):
        """True once the ready file is there; HostLoadError when the child ended before."""
        if self.ready.exists():
            try:
                self.ready_text = self.ready.read_text()
            except OSError:
                pass
            return True
        if self.proc.poll() is not None:
            raise HostLoadError(f"spinlab-load {self.name} exited with status "
                                f"{self.proc.returncode} before it was ready: {self.log_tail()}")
        return False

    def log_tail(self, n=12):
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def stop(self, timeout=20.0):
        """SIGINT and wait (it drains and writes its CSV), then SIGTERM, then SIGKILL. Returns
        its exit status."""
        p = self.proc
        if p is None:
            return None
        for sig, wait in ((signal.SIGINT, timeout), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
            if p.poll() is not None:
                break
            try:
                p.send_signal(sig)
            except ProcessLookupError:
                break
            try:
                p.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                continue
        if p.poll() is None:
            p.wait()
        self.returncode = p.returncode
        return self.returncode

    def summary(self):
        return {"argv": self.argv, "returncode": self.returncode, "ready": self.ready_text,
                "log": str(self.log_path), "log_tail": self.log_tail(6)}


def wait_ready(recorders, timeout, alive=lambda: True):
    """Wait until every recorder is ready; HostLoadError when one exits first, when alive()
    turns false (QEMU ended) or after timeout seconds."""
    t0 = time.monotonic()
    pending = list(recorders)
    while pending:
        pending = [r for r in pending if not r.is_ready()]
        if not pending:
            return time.monotonic() - t0
        if not alive():
            raise HostLoadError("the guest ended before the host recorders were ready")
        if time.monotonic() - t0 > timeout:
            raise HostLoadError(f"spinlab-load {', '.join(r.name for r in pending)} not ready "
                                f"after {timeout:g} s: "
                                + "; ".join(r.log_tail(4) for r in pending))
        time.sleep(0.05)
    return time.monotonic() - t0
