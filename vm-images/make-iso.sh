#!/usr/bin/env bash
# Build a BIOS-bootable GRUB ISO of the spinlab kernel, for libvirt disk boots and hypervisors
# without a direct-kernel (-kernel) loader, such as VMware Workstation (where the original WRK
# experiment ran).
# Usage: vm-images/make-iso.sh KERNEL OUT.iso [KERNEL OPTIONS...] [--initrd FILE]
# The options become the default menu entry's command line; a second entry boots the kernel
# shell with no options.
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 KERNEL OUT.iso [kernel options...] [--initrd FILE]" >&2
    exit 2
fi
kernel=$1 out=$2
shift 2
initrd="" opts=()
while [ $# -gt 0 ]; do
    case $1 in
    --initrd) initrd=$2; shift 2 ;;
    *) opts+=("$1"); shift ;;
    esac
done
[ -f "$kernel" ] || { echo "make-iso: kernel '$kernel' not found (run make first)" >&2; exit 1; }
command -v grub-mkrescue >/dev/null || { echo "make-iso: grub-mkrescue missing (scripts/deps.sh)" >&2; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/boot/grub"
cp "$kernel" "$stage/boot/spinlab.elf"
mod=""
if [ -n "$initrd" ]; then
    cp "$initrd" "$stage/boot/initrd.img"
    mod="    module /boot/initrd.img initrd"
fi
cat > "$stage/boot/grub/grub.cfg" <<CFG
set timeout=0
set default=0
serial --unit=0 --speed=115200
terminal_input serial
terminal_output serial
menuentry "spinlab ${opts[*]:-}" {
    multiboot /boot/spinlab.elf ${opts[*]:-}
$mod
    boot
}
menuentry "spinlab (kernel shell)" {
    multiboot /boot/spinlab.elf
$mod
    boot
}
CFG
grub-mkrescue -o "$out" "$stage" >/dev/null 2>&1 || { echo "make-iso: grub-mkrescue failed" >&2; exit 1; }
echo "make-iso: $out (${opts[*]:-no options})"
