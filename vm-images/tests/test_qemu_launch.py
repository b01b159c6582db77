"""Accelerator choice, the KVM probe and the QEMU command line (vm-images/qemu_launch.py)."""
import errno
import os
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import qemu_launch  # noqa: E402


def test_auto_needs_both_kvm_device_and_hw_virt():
    assert qemu_launch.choose_accel("auto", kvm_ok=True, hw_virt=True) == "kvm"
    # The nested paravirtual KVM of the build machines: /dev/kvm works but no vmx/svm.
    assert qemu_launch.choose_accel("auto", kvm_ok=True, hw_virt=False) == "tcg"
    assert qemu_launch.choose_accel("auto", kvm_ok=False, hw_virt=True) == "tcg"


def test_explicit_choices():
    assert qemu_launch.choose_accel("tcg", kvm_ok=True, hw_virt=True) == "tcg"
    assert qemu_launch.choose_accel("kvm", kvm_ok=True, hw_virt=False) == "kvm"
    with pytest.raises(ValueError, match="/dev/kvm"):
        qemu_launch.choose_accel("kvm", kvm_ok=False, hw_virt=False)
    with pytest.raises(ValueError, match="choose one of"):
        qemu_launch.choose_accel("hvf")


def open_fds():
    return sorted(os.listdir("/proc/self/fd"))


def test_the_probe_names_the_step_that_failed(tmp_path):
    """Each way a /dev/kvm is no KVM, on devices every host has: none, one that is not there,
    one that does not open read-write, one that opens but answers no KVM ioctl (a /dev/null
    bound over /dev/kvm, how scripts simulate a host without KVM). No descriptor is left open."""
    before = open_fds()
    assert qemu_launch.kvm_unusable_reason(str(tmp_path / "kvm")) == f"{tmp_path}/kvm is missing"
    assert qemu_launch.kvm_unusable_reason(str(tmp_path)) == f"{tmp_path} cannot be opened read-write: Is a directory"
    assert qemu_launch.kvm_unusable_reason("/dev/null") == \
        "/dev/null: KVM_GET_API_VERSION failed: Inappropriate ioctl for device"
    (tmp_path / "file").write_text("")
    assert not qemu_launch.kvm_usable(str(tmp_path / "file"))
    assert open_fds() == before


class FakeKvm:
    """fcntl as the probe sees it: KVM_GET_API_VERSION answers `version`; KVM_CREATE_VM
    raises `create_error` or gives a descriptor the test can check was closed."""
    def __init__(self, version=12, create_error=None):
        self.version, self.create_error, self.calls, self.vm_fd = version, create_error, [], None

    def ioctl(self, fd, request, arg=0):
        self.calls.append(request)
        if request == 0xAE00:
            return self.version
        assert request == 0xAE01 and arg == 0, hex(request)
        if self.create_error:
            raise OSError(self.create_error, os.strerror(self.create_error))
        self.vm_fd = os.open("/dev/null", os.O_RDONLY)
        return self.vm_fd


def test_a_kvm_is_usable_only_if_it_makes_a_vm(monkeypatch):
    before = open_fds()
    monkeypatch.setattr(qemu_launch, "fcntl", FakeKvm(version=11))
    assert qemu_launch.kvm_unusable_reason("/dev/null") == "/dev/null: KVM API version 11, not 12"
    fake = FakeKvm(create_error=errno.ENOMEM)
    monkeypatch.setattr(qemu_launch, "fcntl", fake)
    assert qemu_launch.kvm_unusable_reason("/dev/null") == "/dev/null: KVM_CREATE_VM failed: Cannot allocate memory"
    assert fake.calls == [0xAE00, 0xAE01]
    fake = FakeKvm()
    monkeypatch.setattr(qemu_launch, "fcntl", fake)
    assert qemu_launch.kvm_unusable_reason("/dev/null") is None and qemu_launch.kvm_usable("/dev/null")
    with pytest.raises(OSError):   # the VM it made is closed
        os.fstat(fake.vm_fd)
    assert open_fds() == before


def test_auto_picks_tcg_where_dev_kvm_makes_no_vm(monkeypatch):
    """The probe, not the device's presence, decides: a /dev/kvm that opens but makes no VM
    is TCG under auto and a refusal naming the failed step under an explicit kvm."""
    monkeypatch.setattr(qemu_launch, "KVM_DEVICE", "/dev/null")
    assert qemu_launch.choose_accel("auto", hw_virt=True) == "tcg"
    with pytest.raises(ValueError, match="^accelerator 'kvm': /dev/null: KVM_GET_API_VERSION failed: "):
        qemu_launch.choose_accel("kvm")
    assert qemu_launch.choose_accel("tcg") == "tcg"
    monkeypatch.setattr(qemu_launch, "fcntl", FakeKvm())
    assert qemu_launch.choose_accel("auto", hw_virt=True) == "kvm"
    assert qemu_launch.choose_accel("auto", hw_virt=False) == "tcg"


@pytest.mark.skipif(not shutil.which("qemu-system-x86_64"), reason="qemu-system-x86_64 is not installed")
def test_the_probe_agrees_with_qemu_on_this_host():
    """Judged on either kind of host: QEMU's own KVM accelerator starts (a machine of no
    devices, quit at once) exactly where the probe says /dev/kvm is usable."""
    why = qemu_launch.kvm_unusable_reason()
    q = subprocess.run(["qemu-system-x86_64", "-M", "none", "-accel", "kvm", "-display", "none",
                        "-nodefaults", "-monitor", "stdio"], input="quit\n", capture_output=True,
                       text=True, timeout=60)
    assert (q.returncode == 0) == (why is None), (why, q.returncode, q.stderr)
    assert qemu_launch.choose_accel("auto", hw_virt=True) == ("kvm" if why is None else "tcg")


def test_hw_virt_read_from_cpuinfo(tmp_path):
    f = tmp_path / "cpuinfo"
    f.write_text("processor : 0\nflags : fpu vme sse2 vmx\n")
    assert qemu_launch.host_has_hw_virt(str(f))
    f.write_text("processor : 0\nflags : fpu vme sse2 hypervisor\n")
    assert not qemu_launch.host_has_hw_virt(str(f))
    assert not qemu_launch.host_has_hw_virt(str(tmp_path / "missing"))


def test_command_line():
    cmd = qemu_launch.qemu_command("k.elf", cpus=4, memory_mb=512, append="selftest=all",
                                   accel="tcg", initrd="r.img")
    assert cmd[0] == "qemu-system-x86_64"
    assert cmd[cmd.index("-smp") + 1] == "4"
    assert cmd[cmd.index("-m") + 1] == "512"
    assert cmd[cmd.index("-append") + 1] == "selftest=all"
    assert cmd[cmd.index("-accel") + 1] == "tcg,thread=multi"
    assert cmd[cmd.index("-initrd") + 1] == "r.img"
    assert "-no-reboot" in cmd and "isa-debug-exit,iobase=0xf4,iosize=0x04" in cmd
    kvm = qemu_launch.qemu_command("k.elf", accel="kvm")
    assert kvm[kvm.index("-cpu") + 1] == "host,-arch-capabilities"


def test_exit_codes_match_kernel():
    # kern/console.h: kExitPass = 0x10, kExitFail = 0x11; QEMU exits with (code << 1) | 1.
    assert qemu_launch.EXIT_PASS == 33 and qemu_launch.EXIT_FAIL == 35


def test_iso_boot_uses_seabios_and_cdrom():
    cmd = qemu_launch.qemu_command("k.elf", iso="s.iso", append="ignored")
    assert cmd[cmd.index("-cdrom") + 1] == "s.iso"
    assert "-kernel" not in cmd and "-bios" not in cmd and "-append" not in cmd
