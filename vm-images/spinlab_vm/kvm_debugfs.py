"""The TSC offset and scaling KVM applies to a VM's vCPUs, as its debugfs states them.

KVM makes one debugfs directory per VM, `<debugfs>/kvm/<pid>-<fd>/` (pid: the process that
created the VM, QEMU; fd: its VM file descriptor), with `vcpu<N>/tsc-offset` (signed, host
cycles added to the host TSC when the guest reads its TSC) and, only where the CPU can scale
TSCs, `vcpu<N>/tsc-scaling-ratio` and `tsc-scaling-ratio-frac-bits` (ratio / 2^frac_bits;
absent: ratio 1). What the offset means next to spinlab's sampled clock fit, and which one was
shown right on this machine: collector/README.md, "Under KVM".

read_tsc() never raises for a missing source: it returns the reason instead, so a caller falls
back to the sampled fit and says why (TCG: no KVM VM; a non-root user: debugfs unreadable;
debugfs not mounted; a host without KVM: no kvm directory)."""
import json
import os
import subprocess
import sys

DEBUGFS = "/sys/kernel/debug"
# What the private mount namespace mounts on `debugfs` (mount(8)'s arguments before the target):
# the kernel's debugfs. A test gives another source (a tmpfs, a bind of a tree it made) to check
# the namespace's read on a host without KVM.
DEBUGFS_MOUNT = ("-t", "debugfs", "debugfs")


def vm_dirs(pid, debugfs=DEBUGFS):
    """The debugfs directories of the KVM VMs process pid created (usually one)."""
    kvm = os.path.join(debugfs, "kvm")
    try:
        names = os.listdir(kvm)
    except OSError:
        return []
    prefix = f"{int(pid)}-"
    return sorted(os.path.join(kvm, n) for n in names if n.startswith(prefix) and n[len(prefix):].isdigit())


def _read_int(path):
    with open(path) as f:
        text = f.read().strip()
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{path}: expected an integer, read {text!r}") from None


def read_tsc(pid, debugfs=DEBUGFS):
    """(per-vCPU list, None) or (None, reason). Each entry: {"vcpu": N, "tsc_offset": int,
    "tsc_scaling_ratio": float (1.0 where KVM does not scale), "scaling_stated": bool}."""
    kvm = os.path.join(debugfs, "kvm")
    if not os.path.isdir(kvm):
        return None, f"{kvm} is not there (debugfs not mounted, not readable by this user, or no KVM)"
    dirs = vm_dirs(pid, debugfs)
    if not dirs:
        return None, f"no KVM VM of process {pid} in {kvm} (not running under KVM?)"
    if len(dirs) > 1:
        return None, f"process {pid} has {len(dirs)} KVM VMs in {kvm}: which one is the guest is not known"
    vcpus = []
    for name in sorted(os.listdir(dirs[0])):
        if not (name.startswith("vcpu") and name[4:].isdigit()):
            continue
        d = os.path.join(dirs[0], name)
        try:
            offset = _read_int(os.path.join(d, "tsc-offset"))
        except OSError as e:
            return None, f"{d}/tsc-offset: {e.strerror}"
        ratio, stated = 1.0, False
        if os.path.exists(os.path.join(d, "tsc-scaling-ratio")):
            try:
                raw = _read_int(os.path.join(d, "tsc-scaling-ratio"))
                bits = _read_int(os.path.join(d, "tsc-scaling-ratio-frac-bits"))
            except OSError as e:
                return None, f"{d}: tsc scaling unreadable: {e.strerror}"
            ratio, stated = raw / float(1 << bits), True
        vcpus.append({"vcpu": int(name[4:]), "tsc_offset": offset, "tsc_scaling_ratio": ratio,
                      "scaling_stated": stated})
    if not vcpus:
        return None, f"{dirs[0]} lists no vCPU"
    return sorted(vcpus, key=lambda v: v["vcpu"]), None


def read_tsc_mounting(pid, debugfs=DEBUGFS, unshare="unshare", mount=DEBUGFS_MOUNT):
    """read_tsc(pid), and where debugfs is not mounted and this is root: the same read inside a
    private mount namespace of a child (unshare(1), util-linux) that mounts debugfs there (mount:
    mount(8)'s arguments before the target), so the host's mounts are never changed and nothing
    is left to undo. (vcpus, None) or (None, reason); where the debugfs mounted there has no kvm
    directory, the reason says this host has no KVM (NO_KVM)."""
    vcpus, why = read_tsc(pid, debugfs)
    if vcpus is not None or os.path.isdir(os.path.join(debugfs, "kvm")) or os.geteuid() != 0:
        return vcpus, why
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p))
    try:
        r = subprocess.run([unshare, "--mount", "--propagation", "private", sys.executable, "-m",
                            "spinlab_vm.kvm_debugfs", "--mount-and-read", str(int(pid)), debugfs, *mount],
                           capture_output=True, text=True, timeout=20, env=env)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"{why}; reading it in a private mount namespace failed: {e}"
    if r.returncode != 0:
        return None, f"{why}; reading it in a private mount namespace failed: {r.stderr.strip() or r.returncode}"
    try:
        got = json.loads(r.stdout)
        return got["vcpus"], got["why"]
    except (ValueError, KeyError, TypeError):
        return None, f"{why}; the private mount namespace's read answered {r.stdout[:200]!r}"


# Why there is no offset where the debugfs mounted for the read has no kvm directory: KVM makes
# it when it loads (a host that is itself a VM may load kvm without binding it: none).
NO_KVM = "{kvm} is not there in the debugfs mounted for this read (a private mount namespace): no KVM on this host"


def _mount_and_read(pid, debugfs, mount):
    """In the private mount namespace unshare(1) made: mount debugfs and print read_tsc's JSON."""
    r = subprocess.run(["mount", *mount, debugfs], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"mount {' '.join(mount)}: {r.stderr.strip() or r.returncode}")
    kvm = os.path.join(debugfs, "kvm")
    if os.path.isdir(kvm):
        vcpus, why = read_tsc(pid, debugfs)
    else:
        vcpus, why = None, NO_KVM.format(kvm=kvm)
    print(json.dumps({"vcpus": vcpus, "why": why}))


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "--mount-and-read":
        _mount_and_read(int(sys.argv[2]), sys.argv[3], sys.argv[4:] or DEBUGFS_MOUNT)
    else:
        sys.exit("usage: python3 -m spinlab_vm.kvm_debugfs --mount-and-read PID DEBUGFS [MOUNT-ARGS...] "
                 "(read_tsc_mounting runs it)")
