#!/usr/bin/python3
"""Boot the spinlab kernel under QEMU with its console on this terminal.

The serial console is multiplexed with QEMU's monitor: Ctrl-A X quits, Ctrl-A C switches to the
monitor. With no init program the kernel starts its small shell (type 'help').

EXAMPLES
  make qemu CPUS=2
  vm-images/qemu_interactive.py --kernel build/kernel/spinlab.elf --cpus 4 --append 'hz=250'
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qemu_launch  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog=__doc__[__doc__.index("EXAMPLES"):],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kernel", required=True)
    p.add_argument("--initrd")
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
    os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    main()
