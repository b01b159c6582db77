"""Lock modes -> QEMU and kernel arguments, and the mode read back from the guest's facts."""
import os

import pytest
import linux_testlib  # noqa: F401  (spinlab_linux on the path)

from spinlab_linux import boot, modes


def test_tcg_modes():
    assert modes.lock_mode_args("native", "tcg") == (
        ["-accel", "tcg,thread=multi", "-cpu", "max,-hypervisor"], [])
    assert modes.lock_mode_args("tas", "tcg") == (["-accel", "tcg,thread=multi", "-cpu", "max"], [])


def test_kvm_modes():
    assert modes.lock_mode_args("native", "kvm") == (
        ["-accel", "kvm", "-cpu", "host,-arch-capabilities"], ["nopvspin"])
    assert modes.lock_mode_args("tas", "kvm") == (
        ["-accel", "kvm", "-cpu", "host,-arch-capabilities,kvm-pv-unhalt=off"], [])
    assert modes.lock_mode_args("pv", "kvm") == (
        ["-accel", "kvm", "-cpu", "host,-arch-capabilities"], [])


def test_pv_needs_kvm():
    with pytest.raises(modes.ModeError, match=r"lock mode 'pv' needs KVM: .*KVM_HC_KICK_CPU.*"
                                              r"TCG does not provide"):
        modes.lock_mode_args("pv", "tcg")


def test_unknown_mode_and_unresolved_accel():
    with pytest.raises(modes.ModeError, match="choose one of native, tas, pv"):
        modes.lock_mode_args("mcs", "tcg")
    with pytest.raises(modes.ModeError, match="resolve 'auto' first"):
        modes.lock_mode_args("tas", "auto")


def test_pv_under_tcg_is_refused_before_qemu_starts(tmp_path, monkeypatch):
    def no_qemu(*a, **kw):
        raise AssertionError("QEMU was started")

    monkeypatch.setattr(boot.subprocess, "Popen", no_qemu)
    k, i = tmp_path / "k", tmp_path / "i"
    k.write_bytes(b"x")
    i.write_bytes(b"x")
    cfg = boot.GuestConfig(kernel=str(k), initrd=str(i), accel="tcg", mode="pv")
    with pytest.raises(modes.ModeError, match="needs KVM"):
        boot.run_guest(cfg, tmp_path / "out")


@pytest.mark.parametrize("hv, line, mode", [
    (False, "", "native"),                                                      # TCG -hypervisor
    (True, "", "tas"),                                                          # TCG default
    (True, "kvm-guest: PV spinlocks enabled", "pv"),
    (True, 'kvm-guest: PV spinlocks disabled, forced by "nopvspin" parameter', "native"),
    (True, "kvm-guest: PV spinlocks disabled, no host support", "tas"),         # kvm-pv-unhalt=off
    (True, "kvm-guest: PV spinlocks disabled, single CPU", "native"),
])
def test_observed_mode(hv, line, mode):
    assert modes.observed_mode({"hypervisor_flag": hv, "pv_spinlocks_line": line}) == mode


def test_expected_symbol():
    assert modes.expected_symbol("pv") == "__pv_queued_spin_lock_slowpath"
    assert modes.expected_symbol("tas") == modes.expected_symbol("native") == \
        "native_queued_spin_lock_slowpath"


def test_qemu_argv_carries_the_mode_and_the_port(tmp_path):
    cfg = boot.GuestConfig(kernel="/k", initrd="/i", cpus=4, mode="native", seconds=2.5,
                           workload="forkexec", append=["nosmt"])
    argv = boot.qemu_argv(cfg, "tcg", "/tmp/s,x.sock", "/tmp/con.log", "n")
    assert argv[argv.index("-cpu") + 1] == "max,-hypervisor"
    assert argv[argv.index("-smp") + 1] == "4"
    assert "socket,id=waits,path=/tmp/s,,x.sock" in argv
    assert f"virtserialport,bus=vser.0,chardev=waits,name={boot.PORT_NAME}" in argv
    append = argv[argv.index("-append") + 1].split()
    assert {"spinlab.seconds=2.5", "spinlab.workload=forkexec", "spinlab.trace=1",
            "nosmt"} <= set(append)
    assert argv[argv.index("-name") + 1] == "n,debug-threads=on"


def test_cpu_flags_extend_the_modes_cpu():
    cfg = boot.GuestConfig(kernel="/k", initrd="/i", mode="tas", cpu_flags=["-cx16", "-xsave"])
    argv = boot.qemu_argv(cfg, "kvm", "/s", "/c", "n")
    assert argv[argv.index("-cpu") + 1] == "host,-arch-capabilities,kvm-pv-unhalt=off,-cx16,-xsave"


def test_a_kvm_internal_error_is_seen(tmp_path):
    # QEMU pauses the guest for good on a KVM internal error instead of exiting; run_guest
    # watches qemu.log for it rather than waiting out its timeout.
    log = tmp_path / "qemu.log"
    log.write_text("KVM internal error. Suberror: 1\nextra data[0]: 0x1\nemulation failure\n")
    assert boot._qemu_stopped_guest(log) == "KVM internal error. Suberror: 1"
    log.write_text("qemu-system-x86_64: warning: host doesn't support requested feature\n")
    assert boot._qemu_stopped_guest(log) is None
    assert boot._qemu_stopped_guest(tmp_path / "none") is None


def test_sweep_removes_only_dead_runs_folders(tmp_path):
    dead = tmp_path / "sllx999999999-ab12"          # above any pid_max: no such process
    alive = tmp_path / f"sllx{os.getpid()}-cd34"
    other = tmp_path / "sllxnotarun"
    for d in (dead, alive, other):
        d.mkdir()
    assert boot.sweep_stale_tmp(tmp_path) == [str(dead)]
    assert not dead.exists() and alive.exists() and other.exists()
