"""A Linux guest under spinlab-vm (`--guest linux`): Debian's kernel and spinlab's initramfs
from vm-images/linux/ (`spinlab-linux fetch`, `spinlab-linux initramfs`), wired as spinlab's
own kernel is, so that spinlab-run, spinlab-collect and spinlab-load read it unchanged:

- the same ivshmem-plain region (the agent lays it out: vm-images/linux/guest/region.cc);
- the control channel on the virtio-serial port org.spinlab.control, which the agent serves
  (vm-images/linux/guest/channel.cc), behind the same control.sock as spinlab's kernel's COM2;
- COM1 to console.log; no waits port and no clock port: the agent runs in its region-only mode
  (spinlab.stream=0), and its workload runs until the VM is stopped (spinlab.seconds=0);
- the lock mode (`--lock`, in the ABI's words) as QEMU's CPU flags and the kernel's words
  (spinlab_linux.modes): mcs = Linux's native queued spinlock, tas = its virt_spin_lock()
  test-and-set fallback, pvqspin = its paravirtual queued spinlock (KVM only).

adapt_argv wires it for the qemu backend; domain_facts gives the same to the libvirt backend's
domain XML (libvirt.render_xml).
"""
import os

from spinlab_linux import boot, fetch, initramfs, modes, paths  # vm-images/linux/ (spinlab-vm puts it on the path)

from .config import VmError

# The ABI's lock names (spinlab/enum_names.h, what the agent answers on the channel) -> the
# mode names of spinlab_linux.modes.
LOCKS = {"mcs": "native", "tas": "tas", "pvqspin": "pv"}
CONTROL_PORT = boot.CONTROL_PORT_NAME  # the agent's port (spinlab-linux run --region wires the same)
BASE_WORDS = (*boot.BASE_WORDS, "spinlab.region=1", "spinlab.stream=0")
PREPARE_HINT = "run vm-images/linux/spinlab-linux fetch and vm-images/linux/spinlab-linux initramfs"


def kernel_description():
    """build/linux/kernel.json (what `spinlab-linux fetch` resolved), or VmError."""
    try:
        return fetch.load_kernel_json()
    except fetch.FetchError as e:
        raise VmError(f"--guest linux: {e}")


def validate(cfg, kernel_given, initrd_given):
    """Fill in and check a Linux guest's kernel, initrd and lock. kernel_given / initrd_given:
    whether the user named them (else the fetched kernel and the built initramfs)."""
    if cfg.lock not in LOCKS:
        raise VmError(f"--lock '{cfg.lock}': a Linux guest's lock is one of {', '.join(LOCKS)} "
                      "(mcs: the native queued spinlock, tas: virt_spin_lock's test-and-set, "
                      "pvqspin: the paravirtual queued spinlock, KVM only)")
    if not kernel_given:
        k = kernel_description()
        cfg.kernel = fetch.boot_kernel(k)
    if not os.path.isfile(cfg.kernel):
        raise VmError(f"--guest linux: no kernel at {cfg.kernel} ({PREPARE_HINT})")
    cfg.kernel = os.path.abspath(cfg.kernel)
    cfg.initrd = cfg.initrd if initrd_given else str(paths.initramfs_path())
    if not os.path.isfile(cfg.initrd):
        raise VmError(f"--guest linux: no initramfs at {cfg.initrd} ({PREPARE_HINT})")
    cfg.initrd = os.path.abspath(cfg.initrd)


def prepare():
    """`spinlab-vm prepare --guest linux`: Debian's kernel (through linux-image-amd64) and the
    packages the initramfs needs, into build/linux/ (never installed on the host), then the
    initramfs with the agent built from this tree. Returns the lines to print."""
    try:
        k = fetch.fetch()
        m = initramfs.build()
    except (fetch.FetchError, initramfs.InitramfsError) as e:
        raise VmError(f"prepare --guest linux: {e}", status=1)
    return [f"kernel {k['release']} ({k['package']} {k['version']}): {k['boot_kernel']}",
            f"initramfs {m['initramfs']}: {len(m['files'])} files"]


def mode_args(cfg, accel):
    """(QEMU's -accel/-cpu arguments, the kernel's words) for cfg.lock under accel."""
    if cfg.lock == "pvqspin" and accel != "kvm":
        raise VmError("--lock pvqspin needs KVM: Linux's paravirtual queued spinlock halts a waiting "
                      "vCPU and wakes it with the KVM_HC_KICK_CPU hypercall, which TCG does not give "
                      "(use mcs or tas under TCG)")
    try:
        return modes.lock_mode_args(LOCKS[cfg.lock], accel)
    except modes.ModeError as e:
        raise VmError(f"--lock {cfg.lock}: {e}")


def kernel_command_line(cfg, accel):
    _, words = mode_args(cfg, accel)
    return " ".join([*BASE_WORDS, *words, cfg.append]).strip()


def adapt_argv(argv, cfg, accel, esc):
    """spinlab's kernel's argv (qemu.build_argv) made a Linux guest's: its command line, the lock
    mode's CPU, and the control chardev on a virtio-serial port instead of COM2. In place."""
    qemu_args, _ = mode_args(cfg, accel)
    for opt in ("-accel", "-cpu"):
        argv[argv.index(opt) + 1] = qemu_args[qemu_args.index(opt) + 1]
    argv[argv.index("-append") + 1] = kernel_command_line(cfg, accel)
    i = argv.index("chardev:control")
    assert argv[i - 1] == "-serial"
    argv[i - 1:i + 1] = ["-device", "virtio-serial-pci,id=vser",
                         "-device", f"virtserialport,bus=vser.0,chardev=control,name={esc(CONTROL_PORT)}"]
    argv[argv.index("-vga"):argv.index("-vga")] = ["-nic", "none"]
    return argv


def domain_facts(cfg, accel):
    """What the libvirt domain (libvirt.render_xml) takes from a Linux guest, as adapt_argv does
    under QEMU: (the lock mode's -accel/-cpu arguments, the kernel command line, the control
    channel's virtio-serial port name). libvirt writes the -cpu as a <cpu> element and the
    channel as a <channel type='unix'> on a virtio-serial controller; like QEMU's, the domain
    has no NIC."""
    qemu_args, _ = mode_args(cfg, accel)
    return qemu_args, kernel_command_line(cfg, accel), CONTROL_PORT


def facts(cfg):
    """What vm.json records of a Linux guest: the lock, and the kernel's Debian package."""
    out = {"lock": cfg.lock}
    try:
        k = fetch.load_kernel_json()
    except fetch.FetchError:
        return out
    if os.path.abspath(fetch.boot_kernel(k)) == cfg.kernel:
        out["kernel_package"] = k.get("package")
        out["kernel_version"] = k.get("version")
        out["kernel_release"] = k.get("release")
    return out
