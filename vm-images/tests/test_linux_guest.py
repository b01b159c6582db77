"""spinlab-vm --guest linux: the argv that boots a Linux guest wired as spinlab's kernel is (the
region, the control socket on a virtio-serial port, the lock mode's CPU), and what it refuses.
Booting it is vm-images/linux/tests/linux_test_spinlab_run.py's (qemu backend) and
linux_test_vm_libvirt.py's (libvirt)."""
import subprocess

import pytest

from conftest import SPINLAB_VM
from spinlab_vm import config, linux_guest, qemu
from spinlab_vm.config import VmConfig, VmError
from spinlab_vm.state import Paths


def linux_cfg(tmp_path, **kw):
    kernel, initrd = tmp_path / "vmlinux", tmp_path / "initramfs.cpio.gz"
    kernel.write_bytes(b"k")
    initrd.write_bytes(b"i")
    return VmConfig(name="lx", guest="linux", kernel=str(kernel), initrd=str(initrd), **kw)


def argv_of(cfg, accel="tcg"):
    config.validate(cfg)
    return qemu.build_argv(cfg, accel, Paths(cfg.name))


def opt(argv, name):
    return argv[argv.index(name) + 1]


def test_the_control_socket_is_the_agents_virtio_port_and_the_lock_mode_sets_the_cpu(tmp_path, run_dir):
    argv = argv_of(linux_cfg(tmp_path, lock="mcs", append="spinlab.workload=hackbench"))
    assert "chardev:control" not in argv, "COM2 is spinlab's kernel's channel"
    assert f"virtserialport,bus=vser.0,chardev=control,name={linux_guest.CONTROL_PORT}" in argv
    assert any(a.startswith("socket,id=control,path=") and a.endswith("control.sock,server=on,wait=off") for a in argv)
    assert any(a.startswith("ivshmem-plain,memdev=spinlab-shm") for a in argv)
    assert opt(argv, "-cpu") == "max,-hypervisor"          # Linux's native queued spinlock under TCG
    assert opt(argv, "-append") == ("console=ttyS0 panic=-1 loglevel=4 spinlab.region=1 spinlab.stream=0 "
                                    "spinlab.workload=hackbench")
    assert opt(argv, "-initrd").endswith("initramfs.cpio.gz")
    tas = argv_of(linux_cfg(tmp_path, lock="tas"))
    assert opt(tas, "-cpu") == "max"                         # the hypervisor bit: virt_spin_lock
    kvm = argv_of(linux_cfg(tmp_path, lock="mcs"), accel="kvm")
    assert opt(kvm, "-accel") == "kvm" and opt(kvm, "-append").split()[-1] == "nopvspin"


def test_what_a_linux_guest_cannot_have_is_refused(tmp_path, run_dir):
    with pytest.raises(VmError, match="pvqspin needs KVM"):
        argv_of(linux_cfg(tmp_path, lock="pvqspin"))
    with pytest.raises(VmError, match="a Linux guest's lock is one of mcs, tas, pvqspin"):
        argv_of(linux_cfg(tmp_path, lock="ticket"))
    with pytest.raises(VmError, match="no initramfs at"):
        cfg = linux_cfg(tmp_path, lock="tas")
        cfg.initrd = str(tmp_path / "missing")
        config.validate(cfg)
    with pytest.raises(VmError, match="--lock mcs: for a Linux guest"):
        config.validate(VmConfig(name="k", lock="mcs", kernel=str(tmp_path / "vmlinux")))
    with pytest.raises(VmError, match="--guest 'windows'"):
        config.validate(VmConfig(name="k", guest="windows"))


def test_the_libvirt_backend_takes_a_linux_guest(tmp_path, run_dir):
    """Both backends: the domain's wiring is test_builders.py's, its boot linux_test_vm_libvirt.py's."""
    cfg = linux_cfg(tmp_path, lock="tas", backend="libvirt")
    config.validate(cfg)
    assert cfg.backend == "libvirt" and cfg.initrd.endswith("initramfs.cpio.gz")


def test_the_cli_takes_guest_and_lock(tmp_path, run_dir):
    r = subprocess.run([SPINLAB_VM, "run", "lx", "--guest", "linux", "--lock", "pvqspin", "--accel", "tcg",
                        "--kernel", str(tmp_path / "nope")], capture_output=True, text=True, timeout=60)
    assert r.returncode == config.EXIT_USAGE
    assert "no kernel at" in r.stderr and "spinlab-linux fetch" in r.stderr
    h = subprocess.run([SPINLAB_VM, "prepare", "--help"], capture_output=True, text=True, timeout=60)
    assert h.returncode == 0 and "build/linux/" in h.stdout
