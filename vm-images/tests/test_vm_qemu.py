"""Integration: the real kernel under TCG through the direct-QEMU backend: run, start/status/stop
with QMP thread ids, and that nothing outlives spinlab-vm however it ends."""
import json
import os
import re
import signal
import subprocess
import sys
import time

from conftest import (SPINLAB_VM, nothing_left, pid_alive, qemu_processes, running_info, vm,
                      wait_for)

PASS_LINE = re.compile(r"^\d+ passed, 0 failed\s*$", re.M)


def test_run_selftest_passes(run_dir, vm_name, kernel, tmp_path):
    saved = tmp_path / "console.txt"
    r = vm("run", vm_name, "--cpus", "2", "--accel", "tcg", "--append", "selftest=smp",
           "--save-console", str(saved))
    assert r.returncode == 0, r.stderr
    assert "guest reported pass (isa-debug-exit 33)" in r.stderr
    console = saved.read_text()
    assert "spinlab kernel: cmdline" in console and "selftest=smp" in console
    assert "2 CPUs online" in console
    assert PASS_LINE.search(console)
    assert PASS_LINE.search(r.stdout)            # the console was copied to stdout too
    assert nothing_left(run_dir, vm_name)


def test_run_reports_guest_failure(run_dir, vm_name, kernel):
    r = vm("run", vm_name, "--quiet", "--append", "init=/bin/no-such-program")
    assert r.returncode == 1, r.stderr
    assert "guest reported failure (isa-debug-exit 35)" in r.stderr
    assert r.stdout == ""
    assert nothing_left(run_dir, vm_name)


def test_run_timeout(run_dir, vm_name, kernel):
    # Without init= the kernel runs /bin/sh, which waits for console input forever.
    t0 = time.monotonic()
    r = vm("run", vm_name, "--quiet", "--timeout", "2")
    assert r.returncode == 4 and "no end after 2 s" in r.stderr
    assert time.monotonic() - t0 < 30
    assert nothing_left(run_dir, vm_name)


def test_start_status_stop(run_dir, vm_name, kernel):
    r = vm("start", vm_name, "--cpus", "3", "--accel", "tcg", "--pin", "0,1,0", "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    d = run_dir / "vm" / vm_name
    assert info["paths"]["dir"] == str(d) and info["state"] == "running"
    assert info["backend"] == "qemu" and info["accel"] == "tcg" and info["cpus"] == 3
    assert info["qemu_version"].startswith(tuple("0123456789"))
    pid = info["qemu_pid"]
    assert int((d / "qemu.pid").read_text()) == pid
    # N thread ids for N vCPUs, each a thread of QEMU named by debug-threads=on.
    assert [v["index"] for v in info["vcpus"]] == [0, 1, 2]
    tids = info["vcpu_thread_ids"]
    assert len(set(tids)) == 3
    for i, tid in enumerate(tids):
        comm = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
        assert comm == f"CPU {i}/TCG"
        assert os.sched_getaffinity(tid) == {(0, 1, 0)[i]}
    # The files the collector and the runner rely on.
    assert (d / "control.sock").is_socket() and (d / "qmp.sock").is_socket()
    assert os.readlink(d / "shm") == f"/dev/shm/spinlab-{vm_name}"
    assert os.path.getsize(f"/dev/shm/spinlab-{vm_name}") == 16 << 20
    wait_for(lambda: "spinlab kernel" in (d / "console.log").read_text(), 30, "console output")

    s = vm("status", vm_name, "--json")
    assert s.returncode == 0 and json.loads(s.stdout)["status"] == "running"
    s = vm("status", vm_name)
    assert re.search(rf"^{vm_name}\s+running\s+qemu\s+tcg\s+3\s+{pid}\s+"
                     rf"{tids[0]},{tids[1]},{tids[2]}$", s.stdout, re.M), s.stdout
    listed = json.loads(vm("list", "--json").stdout)
    assert [(v["name"], v["status"]) for v in listed] == [(vm_name, "running")]

    again = vm("start", vm_name, "--accel", "tcg")
    assert again.returncode == 2
    assert f"VM {vm_name} is already running (pid {pid})" in again.stderr
    assert pid_alive(pid)

    st = vm("stop", vm_name)
    assert st.returncode == 0 and "stopped" in st.stdout
    wait_for(lambda: nothing_left(run_dir, vm_name), 10, "everything to be gone")
    assert vm("status", vm_name).returncode == 3


def _start_run_under_parent(vm_name, *extra):
    """A parent process that starts `spinlab-vm run` and then just waits (as a runner would)."""
    code = ("import subprocess, sys, time; "
            "p = subprocess.Popen(sys.argv[1:]); print(p.pid, flush=True); time.sleep(600)")
    parent = subprocess.Popen([sys.executable, "-c", code, SPINLAB_VM, "run", vm_name,
                               "--quiet", *extra], stdout=subprocess.PIPE, text=True)
    run_pid = int(parent.stdout.readline())
    return parent, run_pid


def _reaper_of(run_pid):
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                stat = open(f"/proc/{pid}/stat").read()
                cmd = open(f"/proc/{pid}/cmdline").read()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == run_pid and "reaper" in cmd:
                return int(pid)
    return None


def test_sigkill_of_the_parent_leaves_nothing(run_dir, vm_name, kernel):
    parent, run_pid = _start_run_under_parent(vm_name)
    info = running_info(run_dir, vm_name)
    assert qemu_processes(vm_name) == [info["qemu_pid"]]
    parent.kill()
    parent.wait()
    wait_for(lambda: nothing_left(run_dir, vm_name) and not pid_alive(run_pid), 20,
             "QEMU, the state directory and the shm file to go")


def test_sigkill_of_run_leaves_nothing(run_dir, vm_name, kernel):
    parent, run_pid = _start_run_under_parent(vm_name)
    running_info(run_dir, vm_name)
    os.kill(run_pid, signal.SIGKILL)
    try:
        wait_for(lambda: nothing_left(run_dir, vm_name), 20, "the reaper to clean up")
    finally:
        parent.kill()
        parent.wait()


def test_sigterm_of_run_stops_and_reports_the_signal(run_dir, vm_name, kernel):
    p = subprocess.Popen([SPINLAB_VM, "run", vm_name, "--quiet"], stderr=subprocess.PIPE,
                         text=True)
    running_info(run_dir, vm_name)
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=30) == 128 + signal.SIGTERM
    assert "SIGTERM: stopping the VM" in p.stderr.read()
    assert nothing_left(run_dir, vm_name)


def test_ctrl_c_stops_and_reports_the_signal(run_dir, vm_name, kernel):
    # A terminal's Ctrl-C: SIGINT to the whole foreground process group of run.
    p = subprocess.Popen([SPINLAB_VM, "run", vm_name, "--quiet"], stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    info = running_info(run_dir, vm_name)
    os.killpg(p.pid, signal.SIGINT)
    assert p.wait(timeout=30) == 128 + signal.SIGINT
    assert "SIGINT: stopping the VM" in p.stderr.read()
    assert nothing_left(run_dir, vm_name) and not pid_alive(info["qemu_pid"])


def test_cleanup_removes_what_a_double_kill_left(run_dir, vm_name, kernel):
    parent, run_pid = _start_run_under_parent(vm_name)
    try:
        info = running_info(run_dir, vm_name)
        reaper = wait_for(lambda: _reaper_of(run_pid), 10, "the reaper")
        os.kill(reaper, signal.SIGKILL)
        os.kill(run_pid, signal.SIGKILL)
        # QEMU dies with run (PR_SET_PDEATHSIG); the state stays, stale.
        wait_for(lambda: not pid_alive(info["qemu_pid"]), 10, "QEMU to die with run")
    finally:
        parent.kill()
        parent.wait()
    assert (run_dir / "vm" / vm_name).exists()
    assert os.path.exists(f"/dev/shm/spinlab-{vm_name}")
    s = vm("status", vm_name)
    assert s.returncode == 3 and re.search(rf"^{vm_name}\s+stale", s.stdout, re.M)
    c = vm("cleanup")
    assert c.returncode == 0 and f"VM {vm_name}: removed" in c.stdout
    assert nothing_left(run_dir, vm_name)
    # A stale directory does not block the name either: start/run clean it up themselves.
