"""kvm_debugfs on made-up debugfs trees: offsets and scaling per vCPU, and every way the source
is missing named (so the caller falls back to the sampled clock fit and says why)."""
import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from spinlab_vm import kvm_debugfs  # noqa: E402


def tree(tmp_path, vms):
    for vm, vcpus in vms.items():
        for n, files in vcpus.items():
            d = tmp_path / "kvm" / vm / f"vcpu{n}"
            d.mkdir(parents=True)
            for k, v in files.items():
                (d / k).write_text(f"{v}\n")
    return str(tmp_path)


def test_offsets_per_vcpu_and_no_scaling_file_is_ratio_one(tmp_path):
    root = tree(tmp_path, {"123-12": {1: {"tsc-offset": -5000}, 0: {"tsc-offset": 0}}, "1234-9": {0: {"tsc-offset": 7}}})
    vcpus, why = kvm_debugfs.read_tsc(123, root)
    assert why is None
    assert vcpus == [{"vcpu": 0, "tsc_offset": 0, "tsc_scaling_ratio": 1.0, "scaling_stated": False},
                     {"vcpu": 1, "tsc_offset": -5000, "tsc_scaling_ratio": 1.0, "scaling_stated": False}]


def test_scaling_ratio_is_fixed_point(tmp_path):
    root = tree(tmp_path, {"7-3": {0: {"tsc-offset": 1, "tsc-scaling-ratio": 3 << 47, "tsc-scaling-ratio-frac-bits": 48}}})
    (v,), why = kvm_debugfs.read_tsc(7, root)
    assert v["tsc_scaling_ratio"] == 1.5 and v["scaling_stated"]


def test_missing_sources_are_named(tmp_path):
    assert "not mounted" in kvm_debugfs.read_tsc(1, str(tmp_path))[1]
    root = tree(tmp_path, {"99-1": {0: {"tsc-offset": 0}}})
    assert "no KVM VM of process 1 " in kvm_debugfs.read_tsc(1, root)[1]
    root = tree(tmp_path / "two", {"5-1": {0: {"tsc-offset": 0}}, "5-2": {0: {"tsc-offset": 0}}})
    assert "2 KVM VMs" in kvm_debugfs.read_tsc(5, root)[1]


def test_garbage_is_an_error_naming_the_file(tmp_path):
    root = tree(tmp_path, {"8-1": {0: {"tsc-offset": "zero"}}})
    with pytest.raises(ValueError, match="vcpu0/tsc-offset: expected an integer"):
        kvm_debugfs.read_tsc(8, root)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare(1)")
def test_an_unmounted_debugfs_is_read_in_a_private_mount_namespace(tmp_path):
    """Where debugfs is not mounted, root reads it in a child's own mount namespace: the answer
    comes from a debugfs mounted there (its kvm directory exists, this process has no VM in it),
    and the host's mounts are as they were."""
    where = tmp_path / "debugfs"
    where.mkdir()
    mounts = open("/proc/self/mounts").read()
    vcpus, why = kvm_debugfs.read_tsc_mounting(os.getpid(), str(where))
    assert vcpus is None and why == f"no KVM VM of process {os.getpid()} in {where}/kvm (not running under KVM?)", why
    assert os.listdir(where) == [] and open("/proc/self/mounts").read() == mounts


def test_without_root_an_unmounted_debugfs_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    vcpus, why = kvm_debugfs.read_tsc_mounting(1, str(tmp_path))
    assert vcpus is None and why.startswith(f"{tmp_path}/kvm is not there")
