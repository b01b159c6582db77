"""State handling and pure helpers: vm.json, claiming a name, liveness, stale removal, the
guest verdict, vcpuinfo and thread-name parsing, qemu.conf checks."""
import json
import os
import subprocess

import pytest

from spinlab_vm import libvirt, state, supervise
from spinlab_vm.config import VmError


def test_paths_follow_the_collector_convention(tmp_path):
    p = state.Paths("lab1", tmp_path)
    assert p.dir == tmp_path / "vm" / "lab1"
    assert p.control_socket == p.dir / "control.sock" and p.shm_link == p.dir / "shm"
    assert p.shm == "/dev/shm/spinlab-lab1"


def test_run_dir_from_environment(monkeypatch):
    monkeypatch.setenv("SPINLAB_RUN_DIR", "/tmp/somewhere")
    assert str(state.run_dir()) == "/tmp/somewhere"
    monkeypatch.delenv("SPINLAB_RUN_DIR")
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(os, "geteuid", lambda: 0)   # root's (another user's: test_run_dir.py)
    assert str(state.run_dir()) == "/run/spinlab"


def test_process_identity_survives_pid_reuse_check():
    me = os.getpid()
    start = state.proc_start_time(me)
    assert start and state.process_matches(me, start)
    assert not state.process_matches(me, start + 1)   # same pid, another process
    p = subprocess.Popen(["true"])
    p.wait()
    assert state.proc_start_time(p.pid) is None
    assert not state.process_matches(None, None)


def test_claim_refuses_a_live_vm_and_replaces_a_stale_one(tmp_path, monkeypatch):
    monkeypatch.setattr(state, "SHM_DIR", str(tmp_path / "shm"))
    (tmp_path / "shm").mkdir()
    p = state.Paths("lab1", tmp_path)
    owner = {"pid": os.getpid(), "start_time": state.proc_start_time(os.getpid())}
    info = state.claim(p, supervise.alive, owner)
    assert json.loads(p.vm_json.read_text())["instance"] == info["instance"]
    with pytest.raises(VmError, match="VM lab1 is already running"):
        state.claim(p, supervise.alive, owner)
    # The owner is gone (a pid that has exited): the directory is stale and is replaced.
    dead = subprocess.Popen(["true"])
    dead.wait()
    info["owner"] = {"pid": dead.pid, "start_time": 1}
    state.write_json(p.vm_json, info)
    (tmp_path / "shm" / "spinlab-lab1").write_text("old region")
    (p.dir / "console.log").write_text("old")
    again = state.claim(p, supervise.alive, owner)
    assert again["instance"] != info["instance"]
    assert not (p.dir / "console.log").exists()
    assert not (tmp_path / "shm" / "spinlab-lab1").exists()


def test_teardown_keeps_a_newer_vm_of_the_same_name(tmp_path, monkeypatch):
    monkeypatch.setattr(state, "SHM_DIR", str(tmp_path))
    p = state.Paths("lab1", tmp_path)
    owner = {"pid": os.getpid(), "start_time": None}
    old = state.claim(p, supervise.alive, owner)
    state.remove(p)
    new = state.claim(p, supervise.alive, owner)
    supervise.teardown(p, dict(old, backend="qemu"))   # the old VM's cleanup, arriving late
    assert state.read_json(p.vm_json)["instance"] == new["instance"]
    supervise.teardown(p, dict(new, backend="qemu"))
    assert not p.dir.exists()


def test_list_names(tmp_path):
    assert state.list_names(tmp_path) == []
    for n in ("b", "a"):
        (tmp_path / "vm" / n).mkdir(parents=True)
    assert state.list_names(tmp_path) == ["a", "b"]


def test_guest_status_from_qemu_exit_codes():
    assert supervise.guest_status("qemu", 33, "")[0] == 0
    assert supervise.guest_status("qemu", 35, "")[0] == 1
    assert supervise.guest_status("qemu", 0, "")[0] == 3      # triple fault under -no-reboot
    assert supervise.guest_status("qemu", -9, "")[0] == 3
    assert "SIGKILL" in supervise.guest_status("qemu", -9, "")[1]


def test_console_verdict():
    assert libvirt.console_verdict("x\n3 passed, 0 failed\n") == 0
    assert libvirt.console_verdict("3 passed, 1 failed\r\n") == 1
    assert libvirt.console_verdict("0 passed, 0 failed\n") == 1
    assert libvirt.console_verdict("init: /bin/lockbench exited with status 0\n") == 0
    assert libvirt.console_verdict("init: /bin/lockbench exited with status 2\n") == 1
    assert libvirt.console_verdict("init: cannot start '/bin/nope': not found\n") == 1
    assert libvirt.console_verdict("PANIC on cpu 0: acpi: no RSDP found\n") == 1
    assert libvirt.console_verdict("spinlab kernel: booting\n") is None
    assert supervise.guest_status("libvirt", None, "1 passed, 0 failed")[0] == 0
    assert supervise.guest_status("libvirt", None, "")[0] == 3


def test_parse_vcpuinfo():
    text = ("VCPU:           0\nCPU:            1\nState:          running\n"
            "CPU time:       1.2s\nCPU Affinity:   yy\n\n"
            "VCPU:           1\nCPU:            0\nState:          running\n")
    assert libvirt.parse_vcpuinfo(text) == [(0, 1), (1, 0)]


def test_thread_ids_from_thread_names(tmp_path):
    for tid, comm in ((100, "qemu-system-x86"), (101, "CPU 0/TCG"), (102, "CPU 1/TCG"),
                      (103, "worker"), (104, "CPU 2/KVM")):
        d = tmp_path / "100" / "task" / str(tid)
        d.mkdir(parents=True)
        (d / "comm").write_text(comm + "\n")
    assert libvirt.thread_ids(100, str(tmp_path)) == {0: 101, 1: 102, 2: 104}
    assert libvirt.thread_ids(999, str(tmp_path)) == {}


def test_qemu_conf_user_detection():
    assert not libvirt.qemu_conf_runs_as_root('#user = "root"\n')
    assert libvirt.qemu_conf_runs_as_root('#user = "qemu"\nuser = "root"\n')
    assert not libvirt.qemu_conf_runs_as_root('user = "root"\nuser = "libvirt-qemu"\n')
    assert libvirt.qemu_conf_runs_as_root('user = "+0"\n')
