"""Integration: the libvirt backend for real. Starts virtlogd and libvirtd (-d, no systemd)
when none runs and sets QEMU's user to root in qemu.conf (spinlab-vm libvirt-setup); stops
the daemons it started, and destroys and undefines every domain it defined."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys

import pytest

from conftest import (SPINLAB_VM, VM_IMAGES, check_pause_and_resume, nothing_left, pid_alive, running_info, vm,
                      wait_for)
from spinlab_vm import config, libvirt


def _pid(pidfile):
    try:
        pid = int(open(pidfile).read().split()[0])
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError, IndexError):
        return None


@pytest.fixture(scope="module")
def libvirtd():
    if not shutil.which("libvirtd") or not shutil.which("virsh"):
        pytest.fail("libvirt is not installed: run scripts/deps.sh "
                    "(libvirt-daemon-system, libvirt-clients)")
    had = {f: _pid(f) for f in ("/run/libvirtd.pid", "/run/virtlogd.pid")}
    r = subprocess.run([SPINLAB_VM, "libvirt-setup"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    yield
    # Stop only what we started, and only if no domain runs there any more.
    if not subprocess.run(["virsh", "-q", "list", "--name"], capture_output=True,
                          text=True).stdout.strip():
        for f, before in had.items():
            pid = _pid(f)
            if pid and not before:
                os.kill(pid, signal.SIGTERM)


def domain_exists(name):
    return subprocess.run(["virsh", "-q", "dominfo", f"spinlab-{name}"],
                          capture_output=True).returncode == 0


def test_run_selftest_passes(libvirtd, run_dir, vm_name, kernel, tmp_path):
    saved = tmp_path / "console.txt"
    r = vm("run", vm_name, "--backend", "libvirt", "--accel", "tcg", "--append",
           "selftest=smp", "--save-console", str(saved))
    assert r.returncode == 0, r.stderr
    assert "guest reported pass (console)" in r.stderr
    console = saved.read_text()
    assert "selftest=smp" in console and "2 CPUs online" in console
    assert re.search(r"^\d+ passed, 0 failed\s*$", console, re.M)
    assert nothing_left(run_dir, vm_name) and not domain_exists(vm_name)


def test_start_status_stop(libvirtd, run_dir, vm_name, kernel):
    r = vm("start", vm_name, "--backend", "libvirt", "--cpus", "2", "--pin", "1,0", "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    d = run_dir / "vm" / vm_name
    assert info["domain"] == f"spinlab-{vm_name}" and info["backend"] == "libvirt"
    pid = info["qemu_pid"]
    assert pid_alive(pid) and int((d / "qemu.pid").read_text()) == pid
    tids = info["vcpu_thread_ids"]
    assert len(set(tids)) == 2
    for i, tid in enumerate(tids):
        assert open(f"/proc/{pid}/task/{tid}/comm").read().strip() == f"CPU {i}/TCG"
    # The domain: type qemu under TCG, pinned as asked, wired like the qemu backend.
    xml = subprocess.run(["virsh", "-q", "dumpxml", info["domain"]], capture_output=True,
                         text=True).stdout
    assert "<domain type='qemu'" in xml and "ivshmem-plain" in xml
    vcpuinfo = subprocess.run(["virsh", "-q", "vcpuinfo", info["domain"]],
                              capture_output=True, text=True).stdout
    assert re.findall(r"CPU Affinity:\s+(\S+)", vcpuinfo)[:2] == ["-y", "y-"]
    assert (d / "control.sock").is_socket()
    assert os.readlink(d / "shm") == f"/dev/shm/spinlab-{vm_name}"
    assert os.path.getsize(f"/dev/shm/spinlab-{vm_name}") == 16 << 20
    wait_for(lambda: "spinlab kernel" in (d / "console.log").read_text(), 30, "console")

    s = vm("status", vm_name, "--json")
    assert s.returncode == 0 and json.loads(s.stdout)["status"] == "running"
    again = vm("start", vm_name, "--backend", "libvirt")
    assert again.returncode == 2 and "already running" in again.stderr

    assert vm("stop", vm_name).returncode == 0
    assert not domain_exists(vm_name)   # destroyed and undefined
    wait_for(lambda: nothing_left(run_dir, vm_name), 10, "everything to be gone")


def test_sigkill_of_the_parent_leaves_nothing(libvirtd, run_dir, vm_name, kernel):
    code = ("import subprocess, sys, time; "
            "p = subprocess.Popen(sys.argv[1:]); print(p.pid, flush=True); time.sleep(600)")
    parent = subprocess.Popen([sys.executable, "-c", code, SPINLAB_VM, "run", vm_name,
                               "--backend", "libvirt", "--quiet"], stdout=subprocess.PIPE,
                              text=True)
    run_pid = int(parent.stdout.readline())
    info = running_info(run_dir, vm_name)
    assert domain_exists(vm_name)
    parent.kill()
    parent.wait()
    wait_for(lambda: nothing_left(run_dir, vm_name) and not domain_exists(vm_name)
             and not pid_alive(run_pid) and not pid_alive(info["qemu_pid"]), 30,
             "the domain, QEMU, the state directory and the shm file to go")


def test_sigkill_of_run_leaves_no_domain(libvirtd, run_dir, vm_name, kernel):
    p = subprocess.Popen([SPINLAB_VM, "run", vm_name, "--backend", "libvirt", "--quiet"])
    info = running_info(run_dir, vm_name)
    p.kill()
    p.wait()
    # libvirtd, not run, is QEMU's parent: the reaper destroys and undefines the domain.
    wait_for(lambda: nothing_left(run_dir, vm_name) and not domain_exists(vm_name)
             and not pid_alive(info["qemu_pid"]), 30, "the reaper to clean up")


def test_cleanup_undefines_orphaned_domains(libvirtd, run_dir, vm_name, kernel):
    r = vm("start", vm_name, "--backend", "libvirt")
    assert r.returncode == 0, r.stderr
    # Lose the state directory (as if the run directory were wiped): the domain is orphaned.
    shutil.rmtree(run_dir / "vm" / vm_name)
    c = vm("cleanup")
    assert c.returncode == 0
    assert f"libvirt domain spinlab-{vm_name}: destroyed and undefined" in c.stdout
    assert not domain_exists(vm_name)
    assert not os.path.exists(f"/dev/shm/spinlab-{vm_name}")
    assert libvirt.state(f"spinlab-{vm_name}") is None


def test_pause_and_resume_a_domain(libvirtd, run_dir, vm_name, kernel):
    """virsh suspend and resume through spinlab-vm pause/resume: a busy guest's vCPU threads take
    no CPU while the domain is paused, spinlab-vm still counts the paused domain as there, and
    they run again once resumed."""
    r = vm("start", vm_name, "--backend", "libvirt", "--accel", "tcg", "--cpus", "2", "--append",
           "init=/bin/lockbench --threads-per-cpu 1 --duration-ms 0")
    assert r.returncode == 0, r.stderr
    info = running_info(run_dir, vm_name)
    wait_for(lambda: "lockbench:" in (run_dir / "vm" / vm_name / "console.log").read_text(errors="replace"),
             120, "lockbench to start")
    print("\nCPU seconds of the vCPU threads over 1.5 s: running %.2f, paused %.2f, resumed %.2f"
          % check_pause_and_resume(vm_name, info))
    assert vm("pause", vm_name).returncode == 0
    assert vm("stop", vm_name).returncode == 0   # a paused domain is destroyed like any other
    assert not domain_exists(vm_name)
    wait_for(lambda: nothing_left(run_dir, vm_name), 10, "everything to be gone")


def test_a_neighbours_phase_under_libvirt_runs_both_vms_and_leaves_nothing(libvirtd, run_dir, vm_name, kernel,
                                                                           tmp_path):
    """spinlab-run with the libvirt backend, a neighbours-1 phase and an idle-host phase, two
    repetitions each (TCG): the measured VM and its neighbour are both libvirt domains, the
    neighbour is booted once, suspended outside its phase (its `spinlab-vm run` keeps the paused
    domain) and resumed for each neighbours-1 repetition, each VM's counters are kept, and no
    domain, QEMU, state directory or shm file of either is left afterwards."""
    run = VM_IMAGES.parent / "build" / "host" / "bin" / "spinlab-run"
    if not run.exists():
        pytest.fail(f"{run} missing: run `make build` first")
    r = subprocess.run([str(run), "--vm.backend", "libvirt", "--vm.accel", "tcg", "--vm.name", vm_name,
                        "--run.phases", "neighbours-1,idle-host", "--neighbours.cpus", "1", "--run.repetitions", "2",
                        "--run.duration", "1", "--run.warmup", "0.5", "--run.timeline", "off",
                        "--trace.enable", "none", "--output.dir", str(tmp_path), "--output.run-id", "lv"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = tmp_path / "lv"
    meta = json.loads((out / "meta.json").read_text())
    assert meta["backend"] == "libvirt"
    assert [v["role"] for v in meta["neighbours"]["vms"]] == ["measured", "neighbour"]
    for rep in ("r1", "r2"):
        assert (out / "snapshots" / f"neighbours-1-{rep}.json").exists()
        assert (out / "snapshots" / "neighbours" / f"neighbours-1-{rep}-n1.json").exists()
    log = (out / "logs" / "n1.vm.log").read_text()
    assert "neighbour VM" in r.stderr and "libvirt" in log
    assert log.count("vCPU threads [") == 1, log          # booted once
    assert log.count(f"{vm_name}-n1: paused") == 3, log   # after the boot and each neighbours-1 repetition
    assert log.count(f"{vm_name}-n1: running") == 2, log  # resumed for each
    print(f"\n{log.splitlines()[0]}")
    for name in (vm_name, f"{vm_name}-n1"):
        assert nothing_left(run_dir, name) and not domain_exists(name), name


def test_a_domain_that_ends_before_its_threads_are_read_is_guest_ended(monkeypatch):
    """A guest that ends at once (a short self-test) can finish before virsh answers on a loaded
    host (seen beside a busy loop: `found 0 of 2 vCPU threads` for a guest that passed). That is
    GuestEnded, which `run` answers with the guest's own result; a running domain whose threads
    stay unfound is still an error."""
    from spinlab_vm import libvirt as lv
    monkeypatch.setattr(lv, "virsh", lambda *a, **k: subprocess.CompletedProcess(a, 0, "VCPU: 0\nCPU: 1\n\nVCPU: 1\nCPU: 0\n", ""))
    monkeypatch.setattr(lv, "thread_ids", lambda pid: {})
    monkeypatch.setattr(lv, "state", lambda d: "shut off")
    with pytest.raises(lv.GuestEnded, match="ended before its vCPU threads were read"):
        lv.vcpu_threads("d", 2 ** 22 + 1, 2, timeout=5)  # no such pid: QEMU is gone
    monkeypatch.setattr(lv, "state", lambda d: "running")
    with pytest.raises(config.VmError, match="found 0 of 2 vCPU threads") as e:
        lv.vcpu_threads("d", os.getpid(), 2, timeout=0.3)
    assert not isinstance(e.value, lv.GuestEnded)
