"""KVM's per-vCPU statistics of a running VM, read through QMP `query-stats`.

QEMU (7.1 and later) answers `query-stats` with target "vcpu" and provider "kvm": per vCPU (by
its QOM path) the counters KVM keeps for it (exits, halt_exits, hypercalls,
preemption_reported, preemption_other, directed_yield_attempted, ...), cumulative since the VM
started. `query-cpus-fast` maps each QOM path to its vCPU index. The direct-QEMU backend asks
on the VM's qmp.sock; the libvirt backend through `virsh qemu-monitor-command`.

sample() is the one writer of a sample, the file format the runner keeps per repetition in
kvm-stats/<phase>-r<rep>-<start|end>.json (analysis/README.md):

    {"format": 1, "vm": NAME, "accel": "kvm", "backend": "qemu",
     "monotonic_ns": CLOCK_MONOTONIC when the reply came, "unix": seconds since the epoch,
     "vcpus": [{"vcpu": 0, "stats": {"exits": 1234, ...}}, ...]}

and under KVM "tsc": {"vcpus": [{"vcpu": 0, "tsc_offset": 0, "tsc_scaling_ratio": 1.0,
"scaling_stated": false}, ...]}, the TSC offset and scaling KVM applies to each vCPU as its
debugfs states them (kvm_debugfs; "vcpus": [] and "unavailable": why where they cannot be read:
not root, say), which the analysis takes as the clock where the sampled fit allows them;
or, where there is nothing to read, "vcpus": [] and "unavailable": why (a TCG VM: KVM keeps no
statistics for it; a QEMU without query-stats: QMP's error). Only whole-number counters are
kept (histograms and booleans are left out). Values are cumulative since the VM started: a
counter still 0 at a run's end never moved on that vCPU.
"""
import json
import time

from . import config, kvm_debugfs, libvirt, state
from . import qmp as qmplib
from .config import VmError

FORMAT = 1
QUERY = {"target": "vcpu", "providers": [{"provider": "kvm"}]}


def parse(stats_reply, cpus_reply):
    """query-stats and query-cpus-fast replies -> [{"vcpu": index, "stats": {name: int}}] by
    index. Raises ValueError naming what did not parse."""
    if not isinstance(stats_reply, list) or not isinstance(cpus_reply, list):
        raise ValueError("query-stats and query-cpus-fast must each answer a list")
    index = {}
    for c in cpus_reply:
        try:
            index[c["qom-path"]] = int(c["cpu-index"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"query-cpus-fast: an entry without qom-path and cpu-index: {c!r}") from None
    out = {}
    for entry in stats_reply:
        if not isinstance(entry, dict) or entry.get("provider") != "kvm":
            continue
        path = entry.get("qom-path")
        if path not in index:
            raise ValueError(f"query-stats: qom-path {path!r} is no vCPU of query-cpus-fast")
        stats = {}
        for s in entry.get("stats") or []:
            v = s.get("value") if isinstance(s, dict) else None
            if isinstance(s, dict) and isinstance(s.get("name"), str) and isinstance(v, int) and not isinstance(v, bool):
                stats[s["name"]] = v
        out[index[path]] = stats
    return [{"vcpu": i, "stats": out[i]} for i in sorted(out)]


def _over_qmp(socket_path):
    with qmplib.Qmp(socket_path, timeout=10.0) as q:
        return q.execute("query-stats", QUERY), q.execute("query-cpus-fast")


def _over_virsh(domain):
    def ask(command, arguments=None):
        msg = {"execute": command, **({"arguments": arguments} if arguments else {})}
        r = libvirt.virsh("qemu-monitor-command", domain, json.dumps(msg), timeout=20)
        reply = json.loads(r.stdout)
        if "error" in reply:
            raise qmplib.QmpError(f"{command}: {reply['error'].get('desc', reply['error'])}")
        return reply.get("return")
    return ask("query-stats", QUERY), ask("query-cpus-fast")


def sample(name):
    """One sample of the VM's per-vCPU KVM statistics (the format above). Raises VmError when
    the VM is not there; a VM with nothing to read gives "unavailable"."""
    paths = state.Paths(name)
    info = state.read_json(paths.vm_json)
    if not info:
        raise VmError(f"no VM named {name}: {paths.vm_json} is missing or unreadable", config.EXIT_NO_VERDICT)
    out = {"format": FORMAT, "vm": name, "accel": info.get("accel"), "backend": info.get("backend"),
           "vcpus": []}
    if info.get("accel") != "kvm":
        out["unavailable"] = f"the VM runs under {info.get('accel') or 'an unknown accelerator'}: KVM keeps no statistics for it"
    else:
        try:
            if info.get("backend") == "libvirt":
                replies = _over_virsh(info.get("domain") or libvirt.domain_name(name))
            else:
                replies = _over_qmp(paths.qmp_socket)
            out["vcpus"] = parse(*replies)
            if not out["vcpus"]:
                out["unavailable"] = "query-stats named no vCPU of provider kvm"
        except (OSError, ValueError, qmplib.QmpError, VmError) as e:
            out["unavailable"] = f"query-stats: {e}"
        out["tsc"] = tsc(info)
    out["monotonic_ns"] = time.monotonic_ns()
    out["unix"] = time.time()
    return out


def tsc(info):
    """The TSC offset and scaling KVM applies to each vCPU (kvm_debugfs), as a sample's "tsc":
    {"vcpus": [{"vcpu", "tsc_offset", "tsc_scaling_ratio", "scaling_stated"}, ...]} or
    {"vcpus": [], "unavailable": why}."""
    pid = info.get("qemu_pid")
    if not pid and info.get("backend") == "libvirt":
        pid = libvirt.qemu_pid(info.get("domain") or "")
    if not pid:
        return {"vcpus": [], "unavailable": "vm.json names no QEMU process"}
    vcpus, why = kvm_debugfs.read_tsc_mounting(pid)
    return {"vcpus": vcpus} if vcpus is not None else {"vcpus": [], "unavailable": why}


def table(s):
    """A sample as text: one line per vCPU with its counters that are not 0."""
    if not s["vcpus"]:
        return f"{s['vm']}: no KVM statistics ({s.get('unavailable', 'none')})"
    lines = [f"{s['vm']}: KVM's per-vCPU counters since the VM started (0s left out)"]
    for v in s["vcpus"]:
        moved = ", ".join(f"{k} {n:,}" for k, n in sorted(v["stats"].items()) if n)
        lines.append(f"  vCPU {v['vcpu']}: {moved or 'every counter 0'}")
    tsc = s.get("tsc") or {}
    if tsc.get("vcpus"):
        lines.append("  TSC offset KVM applies (debugfs): " + ", ".join(
            f"vCPU {v['vcpu']} {v['tsc_offset']}" + (f" x{v['tsc_scaling_ratio']:g}" if v["scaling_stated"] else "")
            for v in tsc["vcpus"]))
    elif tsc:
        lines.append(f"  TSC offset KVM applies: not read ({tsc.get('unavailable')})")
    return "\n".join(lines)
