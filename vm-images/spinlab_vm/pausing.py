"""Pausing and resuming a running VM: its vCPUs stop where they are and take no host CPU until
resumed; QEMU, the guest's memory, its region and its channel stay.

The direct-QEMU backend asks QMP (`stop`, `cont`) on the VM's qmp.sock; the libvirt backend
`virsh suspend` and `virsh resume` (libvirt then calls the domain "paused", which spinlab-vm
counts as alive). Either way the answer is checked with `query-status` (or `virsh domstate`):
pause() returns once the VM says it is paused, resume() once it says it runs.

The runner keeps a run's neighbour VMs across its repetitions this way (experiments/runner/
neighbours.h): booted once, paused outside the neighbours-N phases that use them.
"""
from . import config, libvirt, state
from . import qmp as qmplib
from .config import VmError

# What query-status says of a VM whose vCPUs were stopped by `stop`, and of a running one.
PAUSED, RUNNING = "paused", "running"


def _info(name):
    paths = state.Paths(name)
    info = state.read_json(paths.vm_json)
    if not info:
        raise VmError(f"no VM named {name}: {paths.vm_json} is missing or unreadable", config.EXIT_NO_VERDICT)
    if info.get("state") != "running":
        raise VmError(f"{name} is {info.get('state') or 'not started'}, not running: nothing to pause or resume",
                      config.EXIT_NO_VERDICT)
    return paths, info


def _over_qmp(paths, command):
    try:
        with qmplib.Qmp(paths.qmp_socket, timeout=10.0) as q:
            q.execute(command)
            return q.execute("query-status").get("status")
    except (OSError, qmplib.QmpError) as e:
        raise VmError(f"QMP {command} on {paths.qmp_socket}: {e}", config.EXIT_NO_VERDICT) from None


def _over_virsh(domain, command):
    libvirt.virsh(command, domain, timeout=30)
    # virsh's "paused" and "running" are QMP's words too.
    return libvirt.state(domain)


def _change(name, want):
    paths, info = _info(name)
    if info.get("backend") == "libvirt":
        now = _over_virsh(info.get("domain") or libvirt.domain_name(name), "suspend" if want == PAUSED else "resume")
    else:
        now = _over_qmp(paths, "stop" if want == PAUSED else "cont")
    if now != want:
        raise VmError(f"{name}: asked to be {want}, the VM says it is {now!r}", config.EXIT_NO_VERDICT)
    return now


def pause(name):
    """Stops the VM's vCPUs; returns "paused" once the VM says so. Raises VmError naming what
    failed (no such VM, QMP or virsh refused, or the VM says another state)."""
    return _change(name, PAUSED)


def resume(name):
    """Lets a paused VM's vCPUs run again; returns "running" once the VM says so."""
    return _change(name, RUNNING)


def status(name):
    """What the VM says it is: QMP query-status's status, or virsh domstate."""
    paths, info = _info(name)
    if info.get("backend") == "libvirt":
        return libvirt.state(info.get("domain") or libvirt.domain_name(name))
    try:
        with qmplib.Qmp(paths.qmp_socket, timeout=10.0) as q:
            return q.execute("query-status").get("status")
    except (OSError, qmplib.QmpError) as e:
        raise VmError(f"QMP query-status on {paths.qmp_socket}: {e}", config.EXIT_NO_VERDICT) from None


def shown_status(name, alive_status):
    """What `spinlab-vm status` and `list` show for a VM that supervise.describe calls
    alive_status: "paused" for a running VM whose vCPUs were paused, else alive_status. A VM
    that does not answer (its QMP busy with another client, a libvirt domain being torn down) is
    shown as alive_status: pausing is the runner's, and a status query must not fail for it."""
    if alive_status != RUNNING:
        return alive_status
    try:
        return PAUSED if status(name) == PAUSED else alive_status
    except (VmError, OSError):
        return alive_status

