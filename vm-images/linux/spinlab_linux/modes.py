"""Linux's three spinlock modes, and the QEMU and kernel arguments that choose each.

  native  the native queued spinlock (MCS queue, fair). Linux uses it on bare metal, and in a
          VM when the CPU does not announce a hypervisor (X86_FEATURE_HYPERVISOR clear:
          native_pv_lock_init leaves virt_spin_lock_key off) or when KVM's PV spinlocks are
          turned off by `nopvspin` (kvm_spinlock_init then disables virt_spin_lock_key).
          TCG: -cpu max,-hypervisor. KVM: the kernel parameter nopvspin.
  tas     the test-and-set fallback virt_spin_lock() (unfair, no queue), which runs inside
          native_queued_spin_lock_slowpath when the hypervisor bit is set and no PV spinlocks
          are in use. TCG: the default (-cpu max has the hypervisor bit and no KVM PV
          features). KVM: -cpu ...,kvm-pv-unhalt=off ("PV spinlocks disabled, no host
          support" keeps virt_spin_lock_key on).
  pv      the paravirtual queued spinlock (__pv_queued_spin_lock_slowpath): a waiter halts
          (KVM_HC_KICK_CPU wakes it). KVM only: it needs KVM's PV_UNHALT feature.

lock_mode_args() gives the arguments; observed_mode() reads the mode back from what the
guest reported (the hypervisor bit, the kernel's "PV spinlocks" line), so a run can check that
it measured the mode it asked for.
"""
MODES = ("native", "tas", "pv")
TCG_CPU = "max"
KVM_CPU = "host,-arch-capabilities"   # as vm-images/qemu_launch.py: -cpu host aborts on MSR 0x10a


class ModeError(ValueError):
    pass


def lock_mode_args(mode, accel):
    """(QEMU arguments [-accel ..., -cpu ...], extra kernel command-line words) for a lock mode
    under accel ('tcg' or 'kvm')."""
    if mode not in MODES:
        raise ModeError(f"lock mode '{mode}': choose one of {', '.join(MODES)}")
    if accel not in ("tcg", "kvm"):
        raise ModeError(f"accelerator '{accel}': tcg or kvm (resolve 'auto' first)")
    if accel == "tcg":
        if mode == "pv":
            raise ModeError("lock mode 'pv' needs KVM: the paravirtual queued spinlock halts a "
                            "waiting vCPU and wakes it with the KVM_HC_KICK_CPU hypercall, which "
                            "TCG does not provide (use native or tas under TCG, or --accel kvm)")
        cpu = TCG_CPU + (",-hypervisor" if mode == "native" else "")
        return ["-accel", "tcg,thread=multi", "-cpu", cpu], []
    if mode == "native":
        return ["-accel", "kvm", "-cpu", KVM_CPU], ["nopvspin"]
    if mode == "tas":
        return ["-accel", "kvm", "-cpu", KVM_CPU + ",kvm-pv-unhalt=off"], []
    return ["-accel", "kvm", "-cpu", KVM_CPU], []


def observed_mode(meta):
    """The lock mode the guest's kernel chose, from its META frame: 'pv', 'native' or 'tas'."""
    line = meta.get("pv_spinlocks_line") or ""
    if "PV spinlocks enabled" in line:
        return "pv"
    if meta.get("hypervisor_flag") is False:
        return "native"
    # kvm_spinlock_init: every "disabled" reason except missing host support goes on to turn
    # virt_spin_lock_key off (nopvspin, KVM_HINTS_REALTIME, a single CPU).
    if "PV spinlocks disabled" in line and "no host support" not in line:
        return "native"
    return "tas"


def expected_symbol(mode):
    return "__pv_queued_spin_lock_slowpath" if mode == "pv" else "native_queued_spin_lock_slowpath"
