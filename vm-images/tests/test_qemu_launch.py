"""Accelerator choice and the QEMU command line (vm-images/qemu_launch.py)."""
import os
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
