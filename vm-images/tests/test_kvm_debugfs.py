"""kvm_debugfs on made-up debugfs trees: offsets and scaling per vCPU, and every way the source
is missing named (so the caller falls back to the sampled clock fit and says why)."""
import os
import shutil
import subprocess
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


needs_root = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare(1)")


def read_in_namespace(where, pid, **kw):
    """read_tsc_mounting on an empty mount point `where`, which is empty again afterwards and
    the host's mounts as they were: the mount happened in the child's namespace only."""
    where.mkdir()
    mounts = open("/proc/self/mounts").read()
    got = kvm_debugfs.read_tsc_mounting(pid, str(where), **kw)
    assert os.listdir(where) == [] and open("/proc/self/mounts").read() == mounts
    return got


@needs_root
def test_an_unmounted_debugfs_is_read_in_a_private_mount_namespace(tmp_path):
    """Where debugfs is not mounted, root reads it in a child's own mount namespace: here the
    child mounts a tree this test made (a bind mount in place of debugfs), so the read through
    the namespace is checked on any host, KVM or not: the offsets come from what was mounted
    there, not from the empty directory the caller sees."""
    pid = os.getpid()
    fixture = tree(tmp_path / "fixture", {f"{pid}-11": {0: {"tsc-offset": -42}, 1: {"tsc-offset": -43}}})
    vcpus, why = read_in_namespace(tmp_path / "debugfs", pid, mount=("--bind", fixture))
    assert why is None and [(v["vcpu"], v["tsc_offset"]) for v in vcpus] == [(0, -42), (1, -43)], (vcpus, why)
    # a tree with no kvm directory (a host without KVM): said so, naming the mount point
    where = tmp_path / "nokvm"
    vcpus, why = read_in_namespace(where, pid, mount=("-t", "tmpfs", "none"))
    assert vcpus is None and why == kvm_debugfs.NO_KVM.format(kvm=f"{where}/kvm"), why
    # a mount that fails: the caller's reason and mount's
    where = tmp_path / "bad"
    vcpus, why = read_in_namespace(where, pid, mount=("--bind", str(tmp_path / "missing")))
    assert vcpus is None and why.startswith(f"{where}/kvm is not there") and \
        "reading it in a private mount namespace failed: mount --bind " in why, why


def debugfs_has_kvm(where):
    """This host's premise, measured apart from the code under test: whether the kernel's
    debugfs, mounted on `where` in a mount namespace of its own, has a kvm directory (KVM
    makes it when it loads). None where debugfs cannot be mounted at all."""
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                        'mount -t debugfs debugfs "$1" || exit 2; test -d "$1/kvm"', "sh", str(where)],
                       capture_output=True, text=True, timeout=20)
    return {0: True, 1: False}.get(r.returncode)


@needs_root
def test_the_kernels_debugfs_is_mounted_in_a_private_mount_namespace(tmp_path):
    """The same read with the kernel's debugfs, judged by what this host has: with KVM, its
    kvm directory is read and this process has no VM in it; without KVM (a host that is itself
    a VM, kvm loaded but not bound), the reason says there is no KVM here."""
    probe = tmp_path / "probe"
    probe.mkdir()
    has_kvm = debugfs_has_kvm(probe)
    if has_kvm is None:
        pytest.skip("not judged: debugfs cannot be mounted in a private mount namespace on this host")
    where = tmp_path / "debugfs"
    vcpus, why = read_in_namespace(where, os.getpid())
    if has_kvm:
        assert vcpus is None and why == f"no KVM VM of process {os.getpid()} in {where}/kvm (not running under KVM?)", why
    else:
        assert vcpus is None and why == kvm_debugfs.NO_KVM.format(kvm=f"{where}/kvm"), why


def test_without_root_an_unmounted_debugfs_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    vcpus, why = kvm_debugfs.read_tsc_mounting(1, str(tmp_path))
    assert vcpus is None and why.startswith(f"{tmp_path}/kvm is not there")
