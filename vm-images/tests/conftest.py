"""Shared fixtures for the spinlab-vm tests: a private run directory, unique VM names, the
spinlab-vm command, and waiting helpers."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

VM_IMAGES = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(VM_IMAGES))
sys.path.insert(0, str(VM_IMAGES / "linux"))  # spinlab_linux, for --guest linux (spinlab-vm sets PYTHONPATH so)
SPINLAB_VM = str(VM_IMAGES / "spinlab-vm")
KERNEL = VM_IMAGES.parent / "build" / "kernel" / "spinlab.elf"


@pytest.fixture
def run_dir(monkeypatch):
    # Short, so socket paths stay under the 107-byte limit.
    d = tempfile.mkdtemp(prefix="slvm", dir="/tmp")
    monkeypatch.setenv("SPINLAB_RUN_DIR", d)
    yield Path(d)
    shutil.rmtree(d, ignore_errors=True)


_counter = [0]


@pytest.fixture
def vm_name(run_dir):
    """A name no one else uses (it also names /dev/shm/spinlab-NAME and the libvirt domain)."""
    _counter[0] += 1
    name = f"t{os.getpid()}n{_counter[0]}"
    yield name
    # Whatever a failed test left behind: stop it, so nothing outlives the suite.
    subprocess.run([SPINLAB_VM, "stop", name], capture_output=True, timeout=60)
    try:
        os.unlink(f"/dev/shm/spinlab-{name}")
    except FileNotFoundError:
        pass


@pytest.fixture
def kernel():
    if not KERNEL.is_file():
        pytest.fail(f"no kernel at {KERNEL}: run make kernel first")
    return KERNEL


def vm(*args, timeout=120, **kw):
    return subprocess.run([SPINLAB_VM, *args], capture_output=True, text=True, timeout=timeout,
                          **kw)


def wait_for(pred, timeout=30.0, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.1)


def vm_json(run_dir, name):
    try:
        return json.loads((run_dir / "vm" / name / "vm.json").read_text())
    except (FileNotFoundError, ValueError):
        return None


def running_info(run_dir, name, timeout=60):
    return wait_for(lambda: (vm_json(run_dir, name) or {}).get("state") == "running"
                    and vm_json(run_dir, name), timeout, f"VM {name} to run")


def pid_alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def qemu_processes(name):
    """pids of QEMU processes started with -name NAME,... (qemu backend) or guest=NAME
    (libvirt names the domain spinlab-NAME)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmd and b"qemu-system" in cmd[0]:
            for i, arg in enumerate(cmd[:-1]):
                if arg == b"-name" and (cmd[i + 1].startswith(f"{name},".encode()) or
                                        f"guest=spinlab-{name},".encode() in cmd[i + 1]):
                    if pid_alive(int(pid)):
                        found.append(int(pid))
    return found


def nothing_left(run_dir, name):
    return (not qemu_processes(name) and not os.path.exists(f"/dev/shm/spinlab-{name}")
            and not (run_dir / "vm" / name).exists())


def cpu_seconds(pid, tids):
    """User plus system CPU time of QEMU's threads `tids` so far, in seconds."""
    total = 0
    for tid in tids:
        with open(f"/proc/{pid}/task/{tid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])   # utime, stime (fields 14 and 15)
    return total / os.sysconf("SC_CLK_TCK")


def check_pause_and_resume(name, info, busy_s=0.1, window_s=1.5):
    """`spinlab-vm pause` stops a busy guest's vCPU threads (no CPU time over window_s, the VM
    shown as paused by status), `resume` lets them run again (at least busy_s of CPU time
    over window_s). Returns the CPU seconds measured (running, paused, resumed)."""
    pid, tids = info["qemu_pid"], info["vcpu_thread_ids"]

    def used():
        before = cpu_seconds(pid, tids)
        time.sleep(window_s)
        return cpu_seconds(pid, tids) - before

    running = used()
    assert running >= busy_s, f"the guest's vCPUs used {running:.2f} s of CPU in {window_s} s: not busy"
    p = vm("pause", name)
    assert p.returncode == 0 and p.stdout.strip() == f"{name}: paused", p.stderr
    paused = used()
    s = vm("status", name, "--json")
    assert s.returncode == 0 and json.loads(s.stdout)["status"] == "paused", f"a paused VM is there, paused: {s.stdout}"
    r = vm("resume", name)
    assert r.returncode == 0 and r.stdout.strip() == f"{name}: running", r.stderr
    resumed = used()
    # One clock tick of slack: the last instructions before the stop took effect.
    assert paused <= 1 / os.sysconf("SC_CLK_TCK"), f"paused vCPU threads used {paused:.2f} s of CPU"
    assert resumed >= busy_s, f"resumed vCPU threads used only {resumed:.2f} s of CPU in {window_s} s"
    return running, paused, resumed
