"""Build the QEMU command line for a spinlab guest; choose the accelerator.

`auto` picks KVM only when /dev/kvm makes a VM (kvm_unusable_reason: it opens read-write, says
API version 12 and KVM_CREATE_VM succeeds) and the host CPU has hardware virtualization (vmx or
svm in /proc/cpuinfo); otherwise TCG with one host thread per vCPU, where vCPU threads
are ordinary host threads that host load preempts just as it preempts KVM vCPUs. On the
project's build machines /dev/kvm is a nested paravirtual KVM without vmx/svm that runs guest
ring 0 about 750x slower than native, so auto means TCG there (see
docs/architecture.md).
"""
import fcntl
import os
import platform

QBOOT = "/usr/share/qemu/qboot.rom"   # ~0.1 s to the kernel, vs ~3 s for SeaBIOS under KVM
ACCELS = ("auto", "kvm", "tcg")
KVM_DEVICE = "/dev/kvm"
KVM_API_VERSION = 12           # the only version Linux has answered since 2.6.22
_KVM_GET_API_VERSION = 0xAE00  # _IO(KVMIO, 0x00), <linux/kvm.h>
_KVM_CREATE_VM = 0xAE01        # _IO(KVMIO, 0x01); argument 0: the default machine type


def kvm_unusable_reason(device=None):
    """None when `device` (default KVM_DEVICE) is a KVM that makes VMs: it opens read-write,
    KVM_GET_API_VERSION answers 12 and KVM_CREATE_VM gives a VM, which is closed at once. Else
    one sentence naming the step that failed ("/dev/kvm is missing", "/dev/kvm: KVM_CREATE_VM
    failed: ..."). A /dev/kvm that opens but makes no VM (a host that is itself a VM, with the
    kvm module loaded but not bound) is not usable. A usable one may still be the slow nested
    kind (host_has_hw_virt)."""
    device = device or KVM_DEVICE
    try:
        fd = os.open(device, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return f"{device} is missing"
    except OSError as e:
        return f"{device} cannot be opened read-write: {e.strerror}"
    try:
        try:
            version = fcntl.ioctl(fd, _KVM_GET_API_VERSION, 0)
        except OSError as e:
            return f"{device}: KVM_GET_API_VERSION failed: {e.strerror}"
        if version != KVM_API_VERSION:
            return f"{device}: KVM API version {version}, not {KVM_API_VERSION}"
        try:
            vm = fcntl.ioctl(fd, _KVM_CREATE_VM, 0)
        except OSError as e:
            return f"{device}: KVM_CREATE_VM failed: {e.strerror}"
        os.close(vm)
        return None
    finally:
        os.close(fd)


def kvm_usable(device=None):
    """True when /dev/kvm makes a VM (kvm_unusable_reason says why not)."""
    return kvm_unusable_reason(device) is None


def host_has_hw_virt(cpuinfo_path="/proc/cpuinfo"):
    try:
        with open(cpuinfo_path) as f:
            for line in f:
                if line.startswith("flags"):
                    flags = line.split(":", 1)[1].split()
                    return "vmx" in flags or "svm" in flags
    except OSError:
        pass
    return False


def host_cpu_model(cpuinfo_path="/proc/cpuinfo"):
    """The host CPU's model name, recorded beside benchmark numbers."""
    try:
        with open(cpuinfo_path) as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def choose_accel(requested="auto", kvm_ok=None, hw_virt=None):
    """Resolve 'auto' to 'kvm' or 'tcg'; reject an unusable explicit 'kvm' with a reason.
    kvm_ok: None probes /dev/kvm (kvm_unusable_reason); True or False is taken as given."""
    if requested not in ACCELS:
        raise ValueError(f"accelerator '{requested}': choose one of {', '.join(ACCELS)}")
    if requested == "tcg":
        return "tcg"
    if kvm_ok is None:
        why = kvm_unusable_reason()
    else:
        why = None if kvm_ok else f"{KVM_DEVICE} is not usable"
    if requested == "kvm":
        if why:
            raise ValueError(f"accelerator 'kvm': {why}")
        return "kvm"
    hw_virt = host_has_hw_virt() if hw_virt is None else hw_virt
    return "kvm" if (why is None and hw_virt) else "tcg"


def accel_args(accel):
    if accel == "kvm":
        # -cpu host aborts on these hosts setting MSR 0x10a (arch-capabilities): drop it.
        # The guest then sees KVM's steal time, PV unhalt and PV sched-yield.
        return ["-accel", "kvm", "-cpu", "host,-arch-capabilities"]
    return ["-accel", "tcg,thread=multi", "-cpu", "max"]


def qemu_command(kernel, cpus=2, memory_mb=256, append="", accel="tcg", initrd=None,
                 name="spinlab", serial="stdio", debug_exit=True, extra=(), iso=None):
    """The argv for one guest. serial='stdio' puts COM1 on our stdout (no monitor there).

    With iso, boot that GRUB ISO through SeaBIOS instead (kernel, append and initrd unused:
    the ISO's grub.cfg carries them)."""
    cmd = ["qemu-system-x86_64", "-name", f"{name},debug-threads=on",
           "-M", "q35", "-m", str(memory_mb), "-smp", str(cpus),
           "-nographic", "-monitor", "none", "-vga", "none", "-no-reboot", "-serial", serial]
    if iso:
        cmd += ["-cdrom", iso]
    else:
        cmd += ["-bios", QBOOT, "-kernel", kernel, "-append", append]
    cmd += accel_args(accel)
    if initrd and not iso:
        cmd += ["-initrd", initrd]
    if debug_exit:
        # The guest leaves QEMU with status (code << 1) | 1 by writing code to port 0xf4.
        cmd += ["-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"]
    cmd += list(extra)
    return cmd


# Exit statuses the kernel produces through isa-debug-exit (kern/console.h).
EXIT_PASS = (0x10 << 1) | 1   # 33
EXIT_FAIL = (0x11 << 1) | 1   # 35


def run_bench_boot(cmd, timeout):
    """Boots one in-guest benchmark (qemu_command's argv) and reads its `BENCH {json}` console
    line: (the last such line as a dict, or None when the guest did not pass or printed none;
    QEMU's exit status, or "timeout")."""
    import json
    import subprocess
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "timeout"
    lines = [l for l in p.stdout.splitlines() if l.startswith("BENCH ")]
    if p.returncode != EXIT_PASS or not lines:
        return None, p.returncode
    return json.loads(lines[-1][len("BENCH "):]), p.returncode
