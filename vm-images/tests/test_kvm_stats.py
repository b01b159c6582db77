"""spinlab-vm stats: KVM's per-vCPU counters through QMP query-stats, by vCPU index. A TCG VM has
none and says why; under KVM (where /dev/kvm makes a VM) the counters are there and move."""
import json
import os
import sys
import time

import pytest

from conftest import vm, wait_for

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import qemu_launch  # noqa: E402
from spinlab_vm import kvm_stats  # noqa: E402

CPUS = [{"cpu-index": 0, "qom-path": "/machine/unattached/device[0]", "thread-id": 11},
        {"cpu-index": 1, "qom-path": "/machine/unattached/device[2]", "thread-id": 12}]


def test_the_reply_is_keyed_by_vcpu_index_with_whole_counts_only():
    reply = [{"provider": "kvm", "qom-path": "/machine/unattached/device[2]",
              "stats": [{"name": "exits", "value": 5}, {"name": "halt_poll_fail_hist", "value": [1, 2]},
                        {"name": "guest_mode", "value": True}]},
             {"provider": "kvm", "qom-path": "/machine/unattached/device[0]",
              "stats": [{"name": "exits", "value": 7}, {"name": "preemption_other", "value": 0}]},
             {"provider": "cryptodev", "qom-path": "/objects/c", "stats": [{"name": "x", "value": 1}]}]
    assert kvm_stats.parse(reply, CPUS) == [{"vcpu": 0, "stats": {"exits": 7, "preemption_other": 0}},
                                            {"vcpu": 1, "stats": {"exits": 5}}]


def test_a_path_that_is_no_vcpu_is_an_error_naming_it():
    with pytest.raises(ValueError, match=r"qom-path '/machine/x' is no vCPU"):
        kvm_stats.parse([{"provider": "kvm", "qom-path": "/machine/x", "stats": []}], CPUS)


def test_no_such_vm_exits_3(run_dir):
    r = vm("stats", "nosuch")
    assert r.returncode == 3 and "no VM named nosuch" in r.stderr


def test_a_tcg_vm_has_none_and_says_why(run_dir, vm_name, kernel, tmp_path):
    assert vm("start", vm_name, "--cpus", "1", "--accel", "tcg").returncode == 0
    try:
        out = tmp_path / "s.json"
        r = vm("stats", vm_name, "-o", str(out))
        assert r.returncode == 0, r.stderr
        s = json.loads(out.read_text())
        assert s["format"] == 1 and s["vcpus"] == [] and s["accel"] == "tcg"
        assert "runs under tcg: KVM keeps no statistics" in s["unavailable"]
        assert "no KVM statistics" in vm("stats", vm_name).stdout
    finally:
        vm("stop", vm_name)


KVM_WHY = qemu_launch.kvm_unusable_reason()   # None where /dev/kvm makes a VM


@pytest.mark.skipif(KVM_WHY is not None, reason=f"no usable KVM: {KVM_WHY}")
def test_under_kvm_every_vcpu_has_counters_that_move(run_dir, vm_name, kernel):
    assert vm("start", vm_name, "--cpus", "2", "--accel", "kvm",
              "--append", "init=/bin/lockbench --threads-per-cpu 1 --duration-ms 0").returncode == 0
    try:
        console = run_dir / "vm" / vm_name / "console.log"
        wait_for(lambda: "lockbench:" in console.read_text(errors="replace"), timeout=120, what="lockbench's start")
        a = json.loads(vm("stats", vm_name, "--json").stdout)
        time.sleep(1.0)
        b = json.loads(vm("stats", vm_name, "--json").stdout)
        assert [v["vcpu"] for v in a["vcpus"]] == [0, 1], a
        assert b["monotonic_ns"] > a["monotonic_ns"]
        # Both vCPUs run lockbench and take timer interrupts: each one's exits move.
        moved = [b["vcpus"][i]["stats"].get("exits", 0) - a["vcpus"][i]["stats"].get("exits", 0) for i in (0, 1)]
        assert all(m > 0 for m in moved), (moved, a, b)
        # KVM's TSC offset per vCPU (the analysis' clock, kvm_clock.py): read as root, debugfs
        # mounted or not (a private mount namespace), the same in both samples
        if os.geteuid() == 0:
            assert [v["vcpu"] for v in a["tsc"]["vcpus"]] == [0, 1], a["tsc"]
            assert a["tsc"] == b["tsc"] and all(isinstance(v["tsc_offset"], int) for v in a["tsc"]["vcpus"])
            assert "TSC offset KVM applies (debugfs): vCPU 0 " in vm("stats", vm_name).stdout
        else:
            assert a["tsc"]["vcpus"] == [] and a["tsc"]["unavailable"]
    finally:
        vm("stop", vm_name)
