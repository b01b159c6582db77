"""The libvirt backend: domain XML from vm-images/libvirt-domain.xml, and the virsh calls.

The domain is named spinlab-NAME, is defined (persistent) and started, and is destroyed and
undefined when the VM stops. libvirt runs QEMU itself, so the guest's isa-debug-exit status is
not visible to us; the verdict comes from the guest's own last words on the console (the kernel
prints them before it exits QEMU): see console_verdict().

What libvirt needs on these hosts (architecture page; setup_daemon() does it):
- libvirtd runs without systemd (`libvirtd -d`), and needs virtlogd (`virtlogd -d`) first.
- QEMU runs as root (`user`/`group` in qemu.conf): as libvirt-qemu it cannot open /dev/kvm
  (0600 root), and libvirt then re-probes QEMU's capabilities on every call ("KVM was enabled
  when probing ... but it is not available now"), about 60 s per domain start.
"""
import os
import re
import shutil
import string
import subprocess
import time
from pathlib import Path
from xml.sax.saxutils import escape

from .config import VmError
from . import qemu as qemulib

TEMPLATE = Path(__file__).resolve().parents[1] / "libvirt-domain.xml"
QBOOT = "/usr/share/qemu/qboot.rom"
QEMU_CONF = "/etc/libvirt/qemu.conf"
LIBVIRT_RUN = "/run/libvirt"
SOCKET = "/run/libvirt/libvirt-sock"
METADATA_NS = "https://spinlab.invalid/vm/1"


def uri():
    return os.environ.get("SPINLAB_LIBVIRT_URI") or "qemu:///system"


def domain_name(name):
    return f"spinlab-{name}"


def _text(v):
    return escape(str(v))


def _attr(v):   # the template quotes attributes with '
    return escape(str(v), {"'": "&apos;"})


# QEMU's -cpu models as libvirt's <cpu mode>.
CPU_MODES = {"max": "maximum", "host": "host-passthrough"}
# QEMU -cpu properties that libvirt sets from a <features> switch, not a <cpu><feature>
# (libvirt's pvspinlock becomes QEMU's kvm-pv-unhalt).
FEATURE_SWITCHES = {"kvm-pv-unhalt": "pvspinlock"}

# The control channel: spinlab's kernel serves it on COM2; a Linux guest's agent on a
# virtio-serial port (linux_guest.domain_facts names it). The controller sits on the root bus at
# a fixed slot, as the qemu backend's virtio-serial-pci does (qboot assigns no BARs).
CONTROL_COM2 = """\
    <serial type='unix'>
      <source mode='bind' path='$socket'/>
      <target type='isa-serial' port='1'/>
    </serial>"""
CONTROL_VIRTIO = """\
    <!-- a Linux guest: the control channel is its agent's virtio-serial port, not COM2 -->
    <controller type='virtio-serial' index='0'>
      <address type='pci' domain='0x0000' bus='0x00' slot='0x06' function='0x0'/>
    </controller>
    <channel type='unix'>
      <source mode='bind' path='$socket'/>
      <target type='virtio' name='$port'/>
    </channel>"""


def cpu_values(cpu):
    """QEMU's -cpu value (MODEL,-flag,+flag,flag=on|off: qemu_launch.accel_args, or a Linux
    guest's lock mode) as the template's $cpu_mode, $cpu_features and $feature_switches."""
    model, *flags = cpu.split(",")
    if model not in CPU_MODES:
        raise VmError(f"-cpu {cpu}: the libvirt backend knows the models {', '.join(CPU_MODES)}")
    features, switches = [], []
    for flag in flags:
        if flag[:1] in ("+", "-"):
            name, on = flag[1:], flag[0] == "+"
        else:
            name, _, value = flag.partition("=")
            if value not in ("on", "off"):
                raise VmError(f"-cpu {cpu}: '{flag}' is not a switch (+F, -F, F=on, F=off)")
            on = value == "on"
        if name in FEATURE_SWITCHES:
            switches.append(f"\n    <{FEATURE_SWITCHES[name]} state='{'on' if on else 'off'}'/>")
        else:
            features.append(f"    <feature policy='{'require' if on else 'disable'}' "
                            f"name='{_attr(name)}'/>")
    return {"cpu_mode": CPU_MODES[model], "cpu_features": "\n".join(features),
            "feature_switches": "".join(switches)}


def render_xml(cfg, accel, paths, instance, emulator="/usr/bin/qemu-system-x86_64",
               template=TEMPLATE):
    """The domain XML for cfg (accel 'kvm' or 'tcg'), every value escaped. A Linux guest
    (cfg.guest 'linux') gets what linux_guest.adapt_argv gives it under QEMU: its kernel command
    line, its lock mode's CPU, and the control socket on a virtio-serial port instead of COM2."""
    text, attr = _text, _attr
    pin = "".join(f"\n    <vcpupin vcpu='{i}' cpuset='{c}'/>" for i, c in enumerate(cfg.pin))
    kvm = accel == "kvm"
    values = {
        "domain_type": "kvm" if kvm else "qemu",
        "domain": text(domain_name(cfg.name)),
        "name": attr(cfg.name),
        "instance": attr(instance),
        "memory_mb": cfg.memory_mb,
        "cpus": cfg.cpus,
        "cputune": f"  <cputune>{pin}\n  </cputune>" if cfg.pin else "",
        "loader": (f"    <loader readonly='yes' type='rom'>{text(QBOOT)}</loader>"
                   if os.path.exists(QBOOT) else ""),
        "kernel": text(cfg.kernel),
        "initrd": f"    <initrd>{text(cfg.initrd)}</initrd>" if cfg.initrd else "",
        "append": text(cfg.append),
        "emulator": text(emulator),
        "console_log": attr(paths.console_log),
        "shm_name": attr(os.path.basename(paths.shm)),
        "shm_size_mb": cfg.shm_size_mb,
    }
    # The qemu backend's CPU: KVM here, the host CPU minus arch-capabilities (setting MSR 0x10a
    # aborts QEMU); TCG, QEMU's "max" model.
    qemu_args = qemulib.qemu_launch.accel_args(accel)
    control = string.Template(CONTROL_COM2).substitute(socket=attr(paths.control_socket))
    if cfg.guest == "linux":
        from . import linux_guest   # imports vm-images/linux/spinlab_linux: only when asked
        qemu_args, append, port = linux_guest.domain_facts(cfg, accel)
        values["append"] = text(append)
        control = string.Template(CONTROL_VIRTIO).substitute(socket=attr(paths.control_socket),
                                                             port=attr(port))
    values.update(cpu_values(qemu_args[qemu_args.index("-cpu") + 1]))
    values["control_channel"] = control
    return string.Template(Path(template).read_text()).substitute(values)


def virsh(*args, check=True, timeout=60):
    if not shutil.which("virsh"):
        raise VmError("the libvirt backend needs virsh: install libvirt-clients "
                      "(scripts/deps.sh)")
    try:
        r = subprocess.run(["virsh", "-q", "-c", uri(), *args], capture_output=True, text=True,
                           timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise VmError(f"virsh {args[0]} did not answer in {timeout} s (is libvirtd stuck?)")
    if check and r.returncode != 0:
        msg = (r.stderr.strip() or r.stdout.strip()).replace("\n", " ")
        raise VmError(f"virsh {' '.join(args[:2])}: {msg}")
    return r


def daemon_running():
    return os.path.exists(SOCKET) and virsh("uri", check=False, timeout=10).returncode == 0


def require_daemon():
    if not shutil.which("virsh") or not shutil.which("libvirtd"):
        raise VmError("the libvirt backend needs libvirt: install libvirt-daemon-system and "
                      "libvirt-clients (scripts/deps.sh)")
    if not daemon_running():
        raise VmError("libvirtd is not running: start it with spinlab-vm libvirt-setup "
                      "(or virtlogd -d; libvirtd -d)")


def _pid_running(pidfile):
    try:
        pid = int(Path(pidfile).read_text().split()[0])
        os.kill(pid, 0)
        return True
    except (OSError, ValueError, IndexError):
        return False


def qemu_conf_runs_as_root(conf_text):
    """True when qemu.conf sets user = "root" (or "+0") outside comments."""
    user = None
    for line in conf_text.splitlines():
        m = re.match(r'\s*user\s*=\s*"([^"]*)"', line)
        if m:
            user = m[1]   # the last setting wins
    return user in ("root", "+0")


def setup_daemon(conf_path=QEMU_CONF):
    """Make libvirt usable here; returns a list of what was done (for the log)."""
    done = []
    if not shutil.which("libvirtd"):
        raise VmError("libvirtd is not installed: install libvirt-daemon-system "
                      "(scripts/deps.sh)")
    if os.geteuid() != 0:
        raise VmError("libvirt-setup must run as root (it edits qemu.conf, starts libvirtd)")
    conf = Path(conf_path).read_text()
    changed = False
    if not qemu_conf_runs_as_root(conf):
        with open(conf_path, "a") as f:
            f.write('\n# spinlab-vm libvirt-setup: run QEMU as root; as libvirt-qemu it cannot\n'
                    '# open /dev/kvm here and libvirt re-probes QEMU on every call.\n'
                    'user = "root"\ngroup = "root"\n')
        changed = True
        done.append(f"set user = \"root\", group = \"root\" in {conf_path}")
    if not _pid_running("/run/virtlogd.pid"):
        subprocess.run(["virtlogd", "-d"], check=True, start_new_session=True)
        done.append("started virtlogd -d")
    if daemon_running() and changed:
        raise VmError(f"libvirtd is running with the old {conf_path}: restart it "
                      "(kill $(cat /run/libvirtd.pid); libvirtd -d) and run libvirt-setup again")
    if not daemon_running():
        subprocess.run(["libvirtd", "-d"], check=True, start_new_session=True)
        deadline = time.monotonic() + 20
        while not daemon_running():
            if time.monotonic() > deadline:
                raise VmError("libvirtd -d started but its socket did not answer in 20 s")
            time.sleep(0.2)
        done.append("started libvirtd -d")
    return done


def define_and_start(xml_path, domain):
    virsh("define", str(xml_path))
    try:
        virsh("start", domain)
    except VmError:
        virsh("undefine", domain, check=False)
        raise


# The domain states of a VM that is still there: "paused" is a VM `spinlab-vm pause` stopped.
LIVE_STATES = ("running", "paused")


def state(domain):
    """'running', 'paused', 'shut off', ... or None when no such domain."""
    r = virsh("domstate", domain, check=False, timeout=20)
    return r.stdout.strip() if r.returncode == 0 else None


def destroy_and_undefine(domain):
    if state(domain) is None:
        return
    if state(domain) not in ("shut off",):
        virsh("destroy", domain, check=False)
    virsh("undefine", domain, check=False)


def qemu_pid(domain):
    try:
        return int(Path(LIBVIRT_RUN, "qemu", f"{domain}.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def parse_vcpuinfo(text):
    """virsh vcpuinfo output -> [(vcpu index, host CPU it last ran on or None)]."""
    out = []
    vcpu = None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "VCPU":
            vcpu = int(value)
        elif key == "CPU" and vcpu is not None:
            out.append((vcpu, int(value) if value.isdigit() else None))
            vcpu = None
    return out


def thread_ids(pid, task_root="/proc"):
    """{vcpu index: thread id} from QEMU's thread names ('CPU 1/TCG', 'CPU 0/KVM'),
    which QEMU gives them with -name ...,debug-threads=on (libvirt always sets it)."""
    found = {}
    try:
        tasks = os.listdir(f"{task_root}/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            comm = Path(f"{task_root}/{pid}/task/{tid}/comm").read_text().strip()
        except OSError:
            continue
        m = re.fullmatch(r"CPU (\d+)/(TCG|KVM)", comm)
        if m:
            found[int(m[1])] = int(tid)
    return found


class GuestEnded(VmError):
    """The domain stopped running before its vCPU threads were read: a guest that ends at once
    (a short self-test) can, on a loaded host, finish before virsh answers."""


def vcpu_threads(domain, pid, cpus, timeout=10.0):
    """[(index, tid)] for every vCPU: the list from vcpuinfo, the ids from QEMU's threads.
    Raises GuestEnded when the domain ended first, VmError when the threads stay unfound."""
    deadline = time.monotonic() + timeout
    while True:
        r = virsh("vcpuinfo", domain, check=False)
        info = parse_vcpuinfo(r.stdout) if r.returncode == 0 else []
        tids = thread_ids(pid) if pid else {}
        if len(info) == cpus and all(i in tids for i, _ in info):
            return [(i, tids[i]) for i, _ in info]
        gone = r.returncode != 0 or (pid and not os.path.exists(f"/proc/{pid}"))
        if gone or time.monotonic() > deadline:
            if state(domain) != "running":
                raise GuestEnded(f"domain {domain} ended before its vCPU threads were read")
            if time.monotonic() > deadline:
                raise VmError(f"domain {domain}: found {len(tids)} of {cpus} vCPU threads")
        time.sleep(0.1)


def qemu_version(emulator):
    try:
        out = subprocess.run([emulator, "--version"], capture_output=True, text=True,
                             timeout=10).stdout
    except OSError:
        return None
    m = re.search(r"version (\S+)(?: \((.*)\))?", out)
    return (f"{m[1]} ({m[2]})" if m[2] else m[1]) if m else None


def console_verdict(text):
    """The guest's verdict from its console: 0 pass, 1 fail, None when it gave none.

    The kernel's last words before it leaves QEMU: `init: PROG exited with status N` for a
    first program, `N passed, M failed` for self-tests, a `PANIC` line when it gave up."""
    verdict = None
    for line in text.splitlines():
        line = line.strip()
        m = re.match(r"init: \S+ exited with status (-?\d+)$", line)
        if m:
            verdict = 0 if int(m[1]) == 0 else 1
            continue
        m = re.match(r"(\d+) passed, (\d+) failed$", line)
        if m:
            verdict = 0 if int(m[2]) == 0 and int(m[1]) > 0 else 1
            continue
        if line.startswith("PANIC") or line.startswith("init: cannot start"):
            verdict = 1
    return verdict


def emulator_path():
    return qemulib.qemu_binary()
