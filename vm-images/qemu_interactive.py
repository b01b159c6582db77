#!/usr/bin/python3
"""Boot the spinlab kernel under QEMU with its console on this terminal.

The serial console is multiplexed with QEMU's monitor: Ctrl-A X quits, Ctrl-A C switches to the
monitor. With no init program the kernel starts its small shell (type 'help').

EXAMPLES
  make qemu CPUS=2
  vm-images/qemu_interactive.py --kernel build/kernel/spinlab.elf --cpus 4 --append 'hz=250'
"""
import argparse
import subprocess
import sys

import qemu_launch  # beside this script: Python puts the script's folder on the path


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog=__doc__[__doc__.index("EXAMPLES"):],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kernel", required=True)
    p.add_argument("--initrd", help="initial ramdisk: /bin/sh starts when no init= is given")
    p.add_argument("--cpus", type=int, default=2)
    p.add_argument("--memory", type=int, default=256)
    p.add_argument("--accel", default="auto", choices=qemu_launch.ACCELS)
    p.add_argument("--append", default="")
    a = p.parse_args()
    try:
        accel = qemu_launch.choose_accel(a.accel)
    except ValueError as e:
        p.error(str(e))
    cmd = qemu_launch.qemu_command(a.kernel, cpus=a.cpus, memory_mb=a.memory, append=a.append,
                                   accel=accel, initrd=a.initrd, serial="mon:stdio")
    print(f"qemu: {a.cpus} vCPUs, accel {accel}; Ctrl-A X quits", file=sys.stderr)
    status = subprocess.call(cmd)
    # The kernel leaves through isa-debug-exit: 33 = its first program ended with status 0.
    if status == qemu_launch.EXIT_PASS or status == 0:
        return 0
    if status == qemu_launch.EXIT_FAIL:
        print("qemu: the guest reported failure (see its console above)", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
