"""spinlab-vm: start, run, watch and stop spinlab guests (direct QEMU or libvirt).

Each VM has a name and a state directory <run-dir>/vm/NAME (<run-dir>: $SPINLAB_RUN_DIR; for
root /run/spinlab; else $XDG_RUNTIME_DIR/spinlab, /run/user/<uid>/spinlab when that is the
user's, or ${TMPDIR:-/tmp}/spinlab-<uid>: state.py)
holding control.sock (COM2, the guest's control channel), qmp.sock (QMP, qemu backend),
console.log (COM1), shm (symlink to /dev/shm/spinlab-NAME, the ivshmem-plain region), qemu.pid
and vm.json (configuration, accelerator, vCPU thread ids, start time, QEMU version).

Commands
  start NAME [options]   boot in the background; returns once the vCPU threads are known
  run NAME [options]     boot in the foreground, copy the console to stdout, wait for the guest
                         to end (or Ctrl-C, SIGTERM, --timeout, death of our parent), then stop
                         and remove everything; SIGKILL of run is covered by a watchdog
  stop NAME              stop the VM and remove its state
  pause NAME             stop the VM's vCPUs where they are (QMP stop, virsh suspend): they
                         take no host CPU; QEMU, memory, region and channel stay
  resume NAME            let a paused VM's vCPUs run again (QMP cont, virsh resume)
  status NAME [--json]   one VM (exit 0 running or paused, 3 not running)
  list [--json]          every VM in the run directory
  stats NAME [--json] [-o FILE]
                         KVM's per-vCPU counters (exits, halt exits, hypercalls, preemptions,
                         directed yields) through QMP query-stats, and as root the TSC
                         offset KVM applies to each (debugfs); a TCG VM has none
  prepare [--guest linux] fetch Debian's kernel and build the Linux guest's initramfs
                         (build/linux/; what --guest linux boots)
  cleanup                remove the state of VMs whose QEMU is gone, and leftover spinlab
                         libvirt domains
  libvirt-setup          make libvirt usable here (qemu.conf user root, virtlogd, libvirtd -d)

Exit status: 0 ok (run: the guest reported pass through isa-debug-exit), 1 the guest reported
failure, 2 refused (bad option, name in use, no kernel, no QEMU, /dev/kvm unusable, libvirt
missing), 3 run: QEMU ended without a verdict / status, stop: not running, 4 run: --timeout,
128+N run: stopped by signal N.

EXAMPLES
  spinlab-vm run lab1 --cpus 2 --append 'selftest=smp'
  spinlab-vm start lab1 --cpus 4 --accel tcg --append 'lock=ticket init=/bin/lockbench -t 8'
  spinlab-vm status lab1 --json        # vm.json: vcpu_thread_ids, paths, qemu_pid, accel
  spinlab-collect watch --vm lab1
  spinlab-vm pause lab1; spinlab-vm resume lab1
  spinlab-vm stop lab1
  spinlab-vm run lx --guest linux --lock mcs --append 'spinlab.workload=hackbench spinlab.seconds=0 spinlab.trace=1'
  spinlab-vm libvirt-setup && spinlab-vm run lab2 --backend libvirt --append 'selftest=smp'
  spinlab-vm start lab3 --cpus 2 --pin 0,1 --shm-size 32 --memory 512
  spinlab-vm stats lab1 --json -o before.json   # one sample, as the runner keeps per repetition
  spinlab-vm list; spinlab-vm cleanup
"""
import argparse
import json
import sys

from . import config, kvm_stats, libvirt, pausing, state, supervise
from .config import VmConfig, VmError


class Parser(argparse.ArgumentParser):
    def error(self, message):
        # A usage error names what was wrong, shows the usage, and exits 2.
        self.print_usage(sys.stderr)
        raise VmError(message, config.EXIT_USAGE)


def _int(option):
    def parse(text):
        try:
            return int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a whole number")
    return parse


def _vm_options(p):
    g = p.add_argument_group("VM options")
    g.add_argument("--cpus", type=_int("--cpus"), default=2, help="vCPUs, 1-64 (default 2)")
    g.add_argument("--memory", type=_int("--memory"), default=256, metavar="MB",
                   help="guest memory in MiB (default 256)")
    g.add_argument("--accel", default="auto", metavar="auto|kvm|tcg",
                   help="accelerator (default auto: KVM only with /dev/kvm and vmx/svm, "
                        "else TCG with a thread per vCPU)")
    g.add_argument("--backend", default="qemu", metavar="qemu|libvirt",
                   help="direct QEMU (default, no daemon) or a libvirt domain")
    g.add_argument("--append", default="", metavar="OPTIONS",
                   help="kernel command line, e.g. 'lock=ticket init=/bin/lockbench'")
    g.add_argument("--kernel", default=str(config.DEFAULT_KERNEL), metavar="PATH",
                   help="multiboot kernel (default build/kernel/spinlab.elf of the source tree, "
                        "PREFIX/share/spinlab/kernel/spinlab.elf when installed)")
    g.add_argument("--initrd", default="", metavar="PATH",
                   help="ramdisk of guest programs (default initrd.tar beside the default "
                        "kernel, if there)")
    g.add_argument("--shm-size", type=_int("--shm-size"), default=16, metavar="MB",
                   help="ivshmem region, a power of two in MiB (default 16)")
    g.add_argument("--guest", default="spinlab", metavar="spinlab|linux",
                   help="spinlab's kernel (default) or a Linux guest: Debian's kernel and spinlab's "
                        "initramfs from vm-images/linux/ (spinlab-linux fetch, spinlab-linux initramfs), "
                        "its waits in the region, its control channel on a virtio-serial port")
    g.add_argument("--lock", default="", metavar="mcs|tas|pvqspin",
                   help="--guest linux: Linux's spinlock mode (mcs: the native queued spinlock, tas: "
                        "virt_spin_lock's test-and-set, pvqspin: the paravirtual queued spinlock, KVM only; "
                        "default tas)")
    g.add_argument("--pin", default="", metavar="CPUS",
                   help="host CPU for each vCPU in order, e.g. 0,1 (default: no pinning)")


def build_parser():
    doc = __doc__
    p = Parser(prog="spinlab-vm", description=doc.split("\n\n")[0] + "\n\n" +
               doc[doc.index("Each VM"):doc.index("EXAMPLES")].rstrip(),
               epilog=doc[doc.index("EXAMPLES"):],
               formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    epilog = doc[doc.index("EXAMPLES"):]
    fmt = argparse.RawDescriptionHelpFormatter
    s = sub.add_parser("start", help="boot a VM in the background", epilog=epilog,
                       formatter_class=fmt)
    s.add_argument("name")
    _vm_options(s)
    s.add_argument("--json", action="store_true", help="print vm.json when started")
    r = sub.add_parser("run", help="boot in the foreground until the guest ends", epilog=epilog,
                       formatter_class=fmt)
    r.add_argument("name")
    _vm_options(r)
    r.add_argument("--timeout", type=float, metavar="SECONDS",
                   help="stop the VM after this long and exit 4 (default: no limit)")
    r.add_argument("--quiet", action="store_true", help="do not copy the console to stdout")
    r.add_argument("--save-console", metavar="PATH",
                   help="copy console.log to PATH when the VM ends (the state directory goes)")
    for cmd, text in (("stop", "stop a VM and remove its state"),
                      ("pause", "stop a VM's vCPUs where they are until resumed"),
                      ("resume", "let a paused VM's vCPUs run again"),
                      ("status", "show one VM: running, paused, starting or stale (exit 0 running or paused, 3 not running)")):
        c = sub.add_parser(cmd, help=text, epilog=epilog, formatter_class=fmt)
        c.add_argument("name")
        if cmd == "status":
            c.add_argument("--json", action="store_true", help="print vm.json plus 'status'")
    st = sub.add_parser("stats", help="KVM's per-vCPU counters of a running VM (QMP query-stats)",
                        epilog=epilog, formatter_class=fmt)
    st.add_argument("name")
    st.add_argument("--json", action="store_true", help="print the sample as JSON (the runner's format)")
    st.add_argument("-o", "--output", metavar="FILE",
                    help="write the JSON sample to FILE (whole or not at all) instead of printing")
    ls = sub.add_parser("list", help="every VM in the run directory", epilog=epilog,
                        formatter_class=fmt)
    ls.add_argument("--json", action="store_true")
    text = ("make a guest ready to boot: --guest linux fetches Debian's kernel and builds spinlab's "
            "initramfs into build/linux/ (minutes the first time, seconds after)")
    pr = sub.add_parser("prepare", help=text, description=text, epilog=epilog, formatter_class=fmt)
    pr.add_argument("--guest", default="linux", metavar="linux", help="the guest to prepare (default linux)")
    sub.add_parser("cleanup", help="remove the state of VMs whose QEMU is gone", epilog=epilog,
                   formatter_class=fmt)
    sub.add_parser("libvirt-setup", help="make libvirt usable on this host", epilog=epilog,
                   formatter_class=fmt)
    return p


def config_from(a):
    for opt, value, choices in (("--accel", a.accel, ("auto", "kvm", "tcg")),
                                ("--backend", a.backend, config.BACKENDS)):
        if value not in choices:
            raise VmError(f"{opt} '{value}': choose one of {', '.join(choices)}")
    pin = config.parse_pin(a.pin) if a.pin else ()
    return VmConfig(name=config.check_name(a.name), cpus=a.cpus, memory_mb=a.memory,
                    accel=a.accel, backend=a.backend, append=a.append, kernel=a.kernel,
                    initrd=a.initrd, shm_size_mb=a.shm_size, pin=pin, guest=a.guest,
                    lock=a.lock or ("tas" if a.guest == "linux" else ""))


def _status_line(name, info, status):
    info = info or {}
    tids = ",".join(map(str, info.get("vcpu_thread_ids") or [])) or "-"
    return (f"{name:<16} {status:<9} {info.get('backend') or '-':<8} {info.get('accel') or '-':<5}"
            f" {info.get('cpus') or '-':>4} {info.get('qemu_pid') or '-':>8}  {tids}")


HEADER = (f"{'NAME':<16} {'STATUS':<9} {'BACKEND':<8} {'ACCEL':<5} {'CPUS':>4} {'PID':>8}"
          "  VCPU-THREADS")


def cmd_status(a):
    paths = state.Paths(a.name)
    info = state.read_json(paths.vm_json)
    if info is None and not paths.dir.exists():
        raise VmError(f"no VM named {a.name}: {paths.dir} does not exist",
                      config.EXIT_NO_VERDICT)
    info = info or {"name": a.name}
    status = pausing.shown_status(a.name, supervise.describe(info, paths))
    if a.json:
        print(json.dumps(dict(info, status=status), indent=2, sort_keys=True))
    else:
        print(HEADER)
        print(_status_line(a.name, info, status))
        print(f"console {paths.console_log}\ncontrol {paths.control_socket}\n"
              f"shm     {paths.shm}")
    return config.EXIT_OK if status != "stale" else config.EXIT_NO_VERDICT


def cmd_list(a):
    rows = []
    for name in state.list_names():
        paths = state.Paths(name)
        info = state.read_json(paths.vm_json)
        rows.append((name, info, pausing.shown_status(name, supervise.describe(info, paths))))
    if a.json:
        print(json.dumps([dict(info or {"name": n}, status=s) for n, info, s in rows],
                         indent=2, sort_keys=True))
    else:
        print(HEADER)
        for n, info, s in rows:
            print(_status_line(n, info, s))
    return config.EXIT_OK


def cmd_stats(a):
    s = kvm_stats.sample(a.name)
    if a.output:
        state.write_json(a.output, s)  # whole or not at all
    elif a.json:
        print(json.dumps(s, indent=2, sort_keys=True))
    else:
        print(kvm_stats.table(s))
    return config.EXIT_OK


def main(argv=None):
    try:
        a = build_parser().parse_args(argv)
        if a.command == "start":
            info = supervise.start(config_from(a))
            if a.json:
                print(json.dumps(info, indent=2, sort_keys=True))
            else:
                print(f"{info['name']}: running ({info['backend']}, {info['accel']}, "
                      f"{info['cpus']} vCPUs, vCPU threads {info['vcpu_thread_ids']}); "
                      f"state in {info['paths']['dir']}")
            return config.EXIT_OK
        if a.command == "run":
            if a.timeout is not None and a.timeout <= 0:
                raise VmError(f"--timeout {a.timeout:g}: must be more than 0 seconds")
            return supervise.run(config_from(a), timeout=a.timeout, quiet=a.quiet,
                                 save_console=a.save_console)
        if a.command == "stop":
            was_alive = supervise.stop(a.name)
            print(f"{a.name}: {'stopped' if was_alive else 'was not running'}; state removed")
            return config.EXIT_OK
        if a.command in ("pause", "resume"):
            now = (pausing.pause if a.command == "pause" else pausing.resume)(a.name)
            print(f"{a.name}: {now}")
            return config.EXIT_OK
        if a.command == "status":
            return cmd_status(a)
        if a.command == "list":
            return cmd_list(a)
        if a.command == "stats":
            return cmd_stats(a)
        if a.command == "prepare":
            if a.guest != "linux":
                raise VmError(f"prepare --guest {a.guest}: only a Linux guest is prepared here "
                              "(spinlab's kernel is built by make kernel)")
            from . import linux_guest
            for line in linux_guest.prepare():
                print(line)
            return config.EXIT_OK
        if a.command == "cleanup":
            for line in supervise.cleanup():
                print(line)
            return config.EXIT_OK
        if a.command == "libvirt-setup":
            for line in libvirt.setup_daemon() or ["libvirt is ready (nothing to do)"]:
                print(line)
            return config.EXIT_OK
    except VmError as e:
        print(f"spinlab-vm: {e}", file=sys.stderr)
        return e.status
    except PermissionError as e:   # a path this user may not use: say which, and how to choose another
        print(f"spinlab-vm: {state.permission_text(e)}", file=sys.stderr)
        return config.EXIT_USAGE
    except supervise.Interrupted as e:
        print(f"spinlab-vm: interrupted by {e}", file=sys.stderr)
        return 128 + e.signum
    except KeyboardInterrupt:
        return 130
    return config.EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
