"""The validated description of one VM, and the error type every command reports with.

Validation happens here, once, before anything is created: a bad value is refused with one
sentence naming the option and what would be accepted.
"""
import dataclasses
import os
import re
from pathlib import Path

# Exit statuses of the spinlab-vm commands (documented in README.md and --help).
EXIT_OK = 0            # done; for run: the guest reported pass through isa-debug-exit
EXIT_GUEST_FAIL = 1    # run: the guest reported failure
EXIT_USAGE = 2         # refused: bad option, name in use, no kernel, no QEMU, /dev/kvm unusable
EXIT_NO_VERDICT = 3    # run: QEMU ended without a guest verdict; status: the VM is not running
EXIT_TIMEOUT = 4       # run: --timeout passed before the guest ended

# The guest: build/kernel/ of the source tree this package sits in, or, installed (make install
# copies vm-images/ to PREFIX/share/spinlab/vm-images/), PREFIX/share/spinlab/kernel/. Decided
# from this file's path alone: an installed tool never looks for a source tree.
ROOT = Path(__file__).resolve().parents[2]
INSTALLED = ROOT.name == "spinlab" and ROOT.parent.name == "share"
KERNEL_DIR = ROOT / "kernel" if INSTALLED else ROOT / "build" / "kernel"
DEFAULT_KERNEL = KERNEL_DIR / "spinlab.elf"
DEFAULT_INITRD = KERNEL_DIR / "initrd.tar"
MISSING_KERNEL_HINT = "the installation is incomplete: make install" if INSTALLED else "run make kernel first"
BACKENDS = ("qemu", "libvirt")
GUESTS = ("spinlab", "linux")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")
MAX_CPUS = 64          # the kernel's and the shared region's limit (spinlab/shm.h)


class VmError(Exception):
    """A failure the user can act on: one sentence, and the exit status to leave with."""

    def __init__(self, message, status=EXIT_USAGE):
        super().__init__(message)
        self.status = status


@dataclasses.dataclass
class VmConfig:
    name: str
    cpus: int = 2
    memory_mb: int = 256
    accel: str = "auto"        # as asked; the resolved one goes into vm.json
    backend: str = "qemu"
    append: str = ""
    kernel: str = str(DEFAULT_KERNEL)
    initrd: str = ""           # empty: build/kernel/initrd.tar when it exists
    shm_size_mb: int = 16
    pin: tuple = ()            # host CPU per vCPU, or () for no pinning
    guest: str = "spinlab"     # spinlab (build/kernel/) or linux (vm-images/linux/: linux_guest.py)
    lock: str = ""             # a Linux guest's lock mode in the ABI's words (mcs, tas, pvqspin)


def check_name(name):
    if not NAME_RE.match(name or ""):
        raise VmError(f"VM name '{name}': use 1-32 letters, digits, '_', '.' or '-', "
                      "starting with a letter or digit")
    return name


def parse_pin(text, host_cpus=None):
    """'0,1' or '0-3' or '2,0-1' -> (0, 1) ...; every CPU must be one we may run on."""
    host_cpus = sorted(os.sched_getaffinity(0)) if host_cpus is None else sorted(host_cpus)
    cpus = []
    for part in (text or "").split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise VmError(f"--pin '{text}': expected host CPU numbers like 0,1 or 0-3")
        lo, hi = int(m[1]), int(m[2] if m[2] is not None else m[1])
        if hi < lo:
            raise VmError(f"--pin '{text}': range {part} runs backwards")
        cpus.extend(range(lo, hi + 1))
    for c in cpus:
        if c not in host_cpus:
            raise VmError(f"--pin '{text}': host CPU {c} is not available "
                          f"(this process may use {','.join(map(str, host_cpus))})")
    return tuple(cpus)


def validate(cfg):
    """Check every field of cfg; fill in the default initrd. Returns cfg."""
    check_name(cfg.name)
    if cfg.backend not in BACKENDS:
        raise VmError(f"--backend '{cfg.backend}': choose one of {', '.join(BACKENDS)}")
    if not isinstance(cfg.cpus, int) or not 1 <= cfg.cpus <= MAX_CPUS:
        raise VmError(f"--cpus {cfg.cpus}: must be a whole number from 1 to {MAX_CPUS}")
    if not isinstance(cfg.memory_mb, int) or not 64 <= cfg.memory_mb <= 65536:
        raise VmError(f"--memory {cfg.memory_mb}: must be 64 to 65536 MiB")
    s = cfg.shm_size_mb
    if not isinstance(s, int) or s < 1 or s > 1024 or s & (s - 1):
        raise VmError(f"--shm-size {s}: must be a power of two from 1 to 1024 MiB "
                      "(it becomes a PCI BAR)")
    if "\n" in cfg.append or "\r" in cfg.append or len(cfg.append) > 1000:
        raise VmError("--append: kernel options must be one line of at most 1000 characters")
    if cfg.pin and len(cfg.pin) != cfg.cpus:
        raise VmError(f"--pin lists {len(cfg.pin)} host CPUs for {cfg.cpus} vCPUs: "
                      "give one host CPU per vCPU")
    if cfg.guest not in GUESTS:
        raise VmError(f"--guest '{cfg.guest}': choose one of {', '.join(GUESTS)}")
    if cfg.guest == "linux":
        try:
            from . import linux_guest   # imports vm-images/linux/spinlab_linux: only when asked
        except ImportError as e:
            raise VmError(f"--guest linux needs vm-images/linux/ of spinlab's source tree, which this "
                          f"installation does not carry ({e})")
        linux_guest.validate(cfg, kernel_given=os.path.abspath(cfg.kernel) != str(DEFAULT_KERNEL),
                             initrd_given=bool(cfg.initrd))
        return cfg
    if cfg.lock:
        raise VmError(f"--lock {cfg.lock}: for a Linux guest (--guest linux); spinlab's kernel takes "
                      "its lock from --append lock=...")
    if not os.path.isfile(cfg.kernel):
        if os.path.abspath(cfg.kernel) == str(DEFAULT_KERNEL):
            raise VmError(f"no kernel at {cfg.kernel}: {MISSING_KERNEL_HINT}")
        raise VmError(f"--kernel {cfg.kernel}: no such file (run make kernel first?)")
    cfg.kernel = os.path.abspath(cfg.kernel)
    if cfg.initrd:
        if not os.path.isfile(cfg.initrd):
            raise VmError(f"--initrd {cfg.initrd}: no such file")
        cfg.initrd = os.path.abspath(cfg.initrd)
    elif DEFAULT_INITRD.is_file():
        cfg.initrd = str(DEFAULT_INITRD)
    return cfg
