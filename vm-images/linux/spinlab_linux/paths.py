"""Where the Linux guest's sources and build outputs live."""
import os
from pathlib import Path

LINUX_DIR = Path(__file__).resolve().parents[1]      # vm-images/linux
VM_IMAGES = LINUX_DIR.parent                          # vm-images (qemu_launch.py)
REPO = VM_IMAGES.parent
GUEST_SRC = LINUX_DIR / "guest"                       # agent.c, init


def build_dir():
    """build/linux/ in the repository (git-ignored), or $SPINLAB_LINUX_BUILD."""
    return Path(os.environ.get("SPINLAB_LINUX_BUILD") or REPO / "build" / "linux")


def initramfs_path(build=None):
    """The initramfs `spinlab-linux initramfs` builds by default (build/linux/initramfs.cpio.gz)."""
    return Path(build or build_dir()) / "initramfs.cpio.gz"
