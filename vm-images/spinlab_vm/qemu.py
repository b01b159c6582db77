"""The direct-QEMU backend: the argv, starting QEMU, its vCPU threads, stopping it.

The argv extends vm-images/qemu_launch.py's (machine, qboot, accelerator, isa-debug-exit) with
the lab's wiring: COM1 to console.log, COM2 to the control socket, QMP, the ivshmem-plain region
and a pid file. The ivshmem device sits on the root bus at a fixed slot (00:05.0) in both
backends: qboot assigns no BARs and the kernel programs that device itself.
"""
import ctypes
import os
import shutil
import signal
import subprocess
import time

from .config import VmError
from . import qmp as qmplib

import qemu_launch  # vm-images/qemu_launch.py, beside this package (its tools' folder is on the path)

QEMU = "qemu-system-x86_64"
IVSHMEM_ADDR = "0x5"
PR_SET_PDEATHSIG = 1


def esc(value):
    """Escape a value for a QEMU option list: a comma is written twice."""
    return str(value).replace(",", ",,")


def qemu_binary():
    path = shutil.which(os.environ.get("SPINLAB_QEMU") or QEMU)
    if not path:
        raise VmError(f"QEMU is not installed: {QEMU} is not on PATH "
                      "(install qemu-system-x86, or run scripts/deps.sh)")
    return path


def build_argv(cfg, accel, paths, qemu=QEMU):
    """The full QEMU argv for cfg under accel ('kvm' or 'tcg'), files under paths."""
    extra = [
        "-chardev", f"socket,id=control,path={esc(paths.control_socket)},server=on,wait=off",
        "-serial", "chardev:control",
        "-chardev", f"socket,id=qmp,path={esc(paths.qmp_socket)},server=on,wait=off",
        "-mon", "chardev=qmp,mode=control",
        "-object", f"memory-backend-file,id=spinlab-shm,share=on,mem-path={esc(paths.shm)},"
                   f"size={cfg.shm_size_mb}M",
        "-device", f"ivshmem-plain,memdev=spinlab-shm,bus=pcie.0,addr={IVSHMEM_ADDR}",
        "-pidfile", str(paths.pid_file),
    ]
    argv = qemu_launch.qemu_command(
        cfg.kernel, cpus=cfg.cpus, memory_mb=cfg.memory_mb, append=cfg.append, accel=accel,
        initrd=cfg.initrd or None, name=cfg.name, serial="chardev:console", extra=extra)
    # COM1 (the first -serial) goes to the console log; its chardev must precede its use.
    i = argv.index("-serial")
    argv[i:i] = ["-chardev", f"file,id=console,path={esc(paths.console_log)}"]
    argv[0] = qemu
    if cfg.guest == "linux":
        from . import linux_guest
        linux_guest.adapt_argv(argv, cfg, accel, esc)
    return argv


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def set_pdeathsig(sig):
    """Ask the kernel to send sig to this process when its parent thread dies."""
    if _libc().prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")


def _child_setup_tied():
    # Runs in the child between fork and exec: its own process group (a terminal's Ctrl-C
    # reaches only us, and we decide), and SIGKILL when the parent dies, however it dies.
    os.setpgid(0, 0)
    set_pdeathsig(signal.SIGKILL)


def spawn(argv, log_path, tied):
    """Start QEMU. tied: dies with us (run); else detached in its own session (start)."""
    log = open(log_path, "wb")
    try:
        if tied:
            return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                    preexec_fn=_child_setup_tied)
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True)
    except OSError as e:
        raise VmError(f"cannot run {argv[0]}: {e.strerror}")
    finally:
        log.close()


def query(paths, alive, timeout=15.0):
    """(vcpu threads [(index, tid)], version string, APIC ids by vCPU index) over QMP, once
    QEMU answers."""
    try:
        with qmplib.Qmp(paths.qmp_socket, timeout=timeout, alive=alive) as q:
            cpus = q.execute("query-cpus-fast")
            threads = qmplib.vcpu_threads(cpus)
            apic_ids = qmplib.vcpu_apic_ids(q, cpus)
            version = qmplib.version_string(q.execute("query-version"))
    except (OSError, qmplib.QmpError) as e:
        raise VmError(f"QEMU did not answer on {paths.qmp_socket}: {e}")
    return threads, version, apic_ids


def quit_gracefully(paths, timeout=3.0):
    """Ask QEMU to quit over QMP; False when it could not be asked."""
    try:
        with qmplib.Qmp(paths.qmp_socket, timeout=timeout) as q:
            q.execute("quit")
        return True
    except (OSError, qmplib.QmpError, ValueError):
        return False


def wait_gone(is_alive, timeout):
    deadline = time.monotonic() + timeout
    while is_alive():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def kill(pid, is_alive, paths=None):
    """Stop QEMU pid: QMP quit, then SIGTERM, then SIGKILL. True when it is gone."""
    if not is_alive():
        return True
    if paths is not None and quit_gracefully(paths) and wait_gone(is_alive, 3.0):
        return True
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return True
        if wait_gone(is_alive, wait):
            return True
    return False
