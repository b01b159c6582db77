"""spinlab-vm pause and resume with the direct-QEMU backend (TCG): a busy guest's vCPU threads
take no CPU while paused and run again once resumed; QEMU, its state and its channel stay.
(The libvirt backend's: test_vm_libvirt.py.)"""
import json

import pytest

from conftest import check_pause_and_resume, nothing_left, running_info, vm, wait_for

# A guest that keeps both vCPUs busy: lockbench without an end.
BUSY = "init=/bin/lockbench --threads-per-cpu 1 --duration-ms 0"


def test_pause_stops_the_vcpus_and_resume_runs_them(run_dir, vm_name, kernel):
    r = vm("start", vm_name, "--cpus", "2", "--accel", "tcg", "--append", BUSY)
    assert r.returncode == 0, r.stderr
    info = running_info(run_dir, vm_name)
    d = run_dir / "vm" / vm_name
    wait_for(lambda: "lockbench:" in (d / "console.log").read_text(errors="replace"), 120, "lockbench to start")
    print("\nCPU seconds of the vCPU threads over 1.5 s: running %.2f, paused %.2f, resumed %.2f"
          % check_pause_and_resume(vm_name, info))
    # Pausing twice is fine; a resumed VM stops as any other.
    assert vm("pause", vm_name).returncode == 0 and vm("pause", vm_name).returncode == 0
    assert vm("stop", vm_name).returncode == 0
    wait_for(lambda: nothing_left(run_dir, vm_name), 10, "everything to be gone")


def test_pause_of_a_vm_that_is_not_there_says_so(run_dir):
    r = vm("pause", "nosuchvm")
    assert r.returncode == 3 and "no VM named nosuchvm" in r.stderr
    r = vm("resume", "nosuchvm")
    assert r.returncode == 3 and "no VM named nosuchvm" in r.stderr


def _fake_vm(run_dir, name, script):
    """A VM's state directory whose qmp.sock is a scripted QMP server (test_qmp.serve)."""
    from test_qmp import GREETING, serve
    d = run_dir / "vm" / name
    d.mkdir(parents=True)
    (d / "vm.json").write_text(json.dumps({"name": name, "state": "running", "backend": "qemu"}))
    return serve(str(d / "qmp.sock"), [GREETING, "<", {"return": {}}] + script)


def test_pause_asks_qmp_stop_and_checks_the_status(run_dir):
    from spinlab_vm import pausing
    t, got = _fake_vm(run_dir, "fk1", ["<", {"return": {}}, "<", {"return": {"status": "paused", "running": False}}])
    assert pausing.pause("fk1") == "paused"
    t.join(5)
    assert [m["execute"] for m in got] == ["qmp_capabilities", "stop", "query-status"]


def test_a_vm_that_does_not_say_paused_is_an_error(run_dir):
    from spinlab_vm import pausing
    from spinlab_vm.config import VmError
    t, got = _fake_vm(run_dir, "fk2", ["<", {"return": {}}, "<", {"return": {"status": "running", "running": True}}])
    with pytest.raises(VmError, match="fk2: asked to be paused, the VM says it is 'running'"):
        pausing.pause("fk2")
    t.join(5)


def test_a_refused_resume_names_the_command(run_dir):
    from spinlab_vm import pausing
    from spinlab_vm.config import VmError
    t, _ = _fake_vm(run_dir, "fk3", ["<", {"error": {"class": "GenericError", "desc": "Resetting the Virtual Machine is required"}}])
    with pytest.raises(VmError, match="QMP cont on .*: cont: Resetting the Virtual Machine is required"):
        pausing.resume("fk3")
    t.join(5)


def test_status_shows_a_paused_vm_as_paused_and_an_unanswered_query_as_alive(run_dir):
    """`status` and `list` say "paused" for a live VM whose vCPUs QMP says are stopped; a VM whose
    QMP does not answer is shown as supervise.describe has it (alive: "running"), not an error."""
    from spinlab_vm import pausing
    t, got = _fake_vm(run_dir, "fk4", ["<", {"return": {"status": "paused", "running": False}}])
    assert pausing.shown_status("fk4", "running") == "paused"
    t.join(5)
    assert [m["execute"] for m in got] == ["qmp_capabilities", "query-status"]
    assert pausing.shown_status("fk4", "running") == "running"  # no server now: the socket refuses
    assert pausing.shown_status("fk4", "stale") == "stale"       # not asked: QMP is not there
