"""spinlab-vm's refusals: one clear sentence and a non-zero exit, before anything starts."""
import os

from conftest import SPINLAB_VM, vm
import qemu_launch
from spinlab_vm import cli


def fake_kernel(tmp_path):
    k = tmp_path / "k.elf"
    k.write_bytes(b"\x7fELF")
    return str(k)


def test_help_ends_with_examples():
    r = vm("--help")
    assert r.returncode == 0
    assert r.stdout.rstrip().splitlines()[-1].startswith("  spinlab-vm")
    assert "\nEXAMPLES\n" in r.stdout
    assert r.stdout.rstrip().split("EXAMPLES")[-1].count("spinlab-vm") >= 5
    r = vm("run", "--help")
    assert "EXAMPLES" in r.stdout and "--save-console" in r.stdout


def test_bad_cpus(run_dir, tmp_path):
    r = vm("start", "x", "--cpus", "0", "--kernel", fake_kernel(tmp_path))
    assert r.returncode == 2
    assert "--cpus 0: must be a whole number from 1 to 64" in r.stderr
    r = vm("start", "x", "--cpus", "two")
    assert r.returncode == 2 and "'two' is not a whole number" in r.stderr
    assert not (run_dir / "vm" / "x").exists()


def test_bad_name_accel_backend(run_dir, tmp_path):
    k = fake_kernel(tmp_path)
    r = vm("start", "a/b", "--kernel", k)
    assert r.returncode == 2 and "VM name 'a/b'" in r.stderr
    r = vm("start", "x", "--accel", "hvf", "--kernel", k)
    assert r.returncode == 2 and "--accel 'hvf': choose one of auto, kvm, tcg" in r.stderr
    r = vm("run", "x", "--backend", "xen", "--kernel", k)
    assert r.returncode == 2 and "--backend 'xen'" in r.stderr
    r = vm("run", "x", "--timeout", "0", "--kernel", k)
    assert r.returncode == 2 and "--timeout 0" in r.stderr


def test_no_kernel(run_dir, tmp_path):
    r = vm("start", "x", "--kernel", str(tmp_path / "missing.elf"))
    assert r.returncode == 2 and "no such file (run make kernel first?)" in r.stderr


def test_qemu_missing(run_dir, tmp_path):
    env = dict(os.environ, PATH=str(tmp_path))   # no qemu-system-x86_64 on this PATH
    r = vm("start", "x", "--kernel", fake_kernel(tmp_path), "--accel", "tcg", env=env)
    assert r.returncode == 2
    assert "QEMU is not installed: qemu-system-x86_64 is not on PATH" in r.stderr
    assert not (run_dir / "vm" / "x").exists()


def test_kvm_unusable(run_dir, tmp_path, monkeypatch, capsys):
    # A /dev/kvm that opens but makes no VM (qemu_launch.kvm_unusable_reason): refused with the step
    monkeypatch.setattr(qemu_launch, "KVM_DEVICE", "/dev/null")
    status = cli.main(["start", "x", "--accel", "kvm", "--kernel", fake_kernel(tmp_path)])
    assert status == 2
    assert "--accel kvm: /dev/null: KVM_GET_API_VERSION failed: Inappropriate ioctl for device" in capsys.readouterr().err
    assert not (run_dir / "vm" / "x").exists()


def test_unknown_vm(run_dir):
    for cmd in ("stop", "status"):
        r = vm(cmd, "nosuch")
        assert r.returncode == 3 and "no VM named nosuch" in r.stderr


def test_list_and_cleanup_when_empty(run_dir):
    r = vm("list")
    assert r.returncode == 0 and r.stdout.startswith("NAME")
    assert vm("list", "--json").stdout.strip() == "[]"
    assert vm("cleanup").returncode == 0


def test_script_is_executable_and_runs_debians_python3():
    with open(SPINLAB_VM) as f:
        text = f.read()
    assert text.startswith("#!/bin/bash\n") and "exec /usr/bin/python3 -m spinlab_vm.cli" in text
    assert os.access(SPINLAB_VM, os.X_OK)
