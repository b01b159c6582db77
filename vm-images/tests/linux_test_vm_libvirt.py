"""Integration: a Linux guest (--guest linux) under the libvirt backend, TCG, booted from the
image in build/linux/ (vm-images/linux/spinlab-linux fetch, initramfs). The domain runs QEMU with
the lock mode's CPU and the agent's virtio-serial port, and spinlab-collect reaches the agent
through control.sock and the region as it does under the qemu backend: `info` names the lock the
guest's kernel chose (so the CPU flags took effect), `query` names its class and counts waits.
After `stop` (start) or SIGTERM (run) the domain is undefined and QEMU, the state directory and
the shm file are gone. libvirtd as test_vm_libvirt.py starts it (its fixture)."""
import json
import os
import signal
import subprocess

import pytest

from conftest import SPINLAB_VM, VM_IMAGES, nothing_left, pid_alive, running_info, vm, wait_for
from spinlab_vm import linux_guest
from spinlab_vm.config import VmError
from spinlab_linux import fetch, paths
from test_vm_libvirt import domain_exists, libvirtd  # noqa: F401  (a fixture)

COLLECT = VM_IMAGES.parent / "build" / "host" / "bin" / "spinlab-collect"
APPEND = "spinlab.workload=hackbench spinlab.seconds=0 spinlab.trace=1"


@pytest.fixture
def linux_image():
    """The kernel's release, once build/linux/ has the kernel and the initramfs that spinlab-vm
    boots by default; skipped where it has not (make test builds them in its Linux guest step)."""
    try:
        k = linux_guest.kernel_description()
    except VmError as e:
        pytest.skip(f"no Linux guest image: {e}")
    for f in (fetch.boot_kernel(k), paths.initramfs_path()):
        if not os.path.isfile(f):
            pytest.skip(f"no Linux guest image: {f} is missing ({linux_guest.PREPARE_HINT})")
    if not COLLECT.is_file():
        pytest.fail(f"{COLLECT} missing: run `make build` first")
    return k["release"]


def collect(*args):
    return subprocess.run([str(COLLECT), *args], capture_output=True, text=True, timeout=60)


def qemu_cmdline(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return [a.decode() for a in f.read().split(b"\0")]


def check_the_guest(run_dir, name, info, lock, cpu, hypervisor, release):
    """The domain's QEMU as libvirt started it, then the agent over control.sock and the region."""
    argv = qemu_cmdline(info["qemu_pid"])
    assert argv[argv.index("-cpu") + 1] == cpu, argv
    assert argv[argv.index("-append") + 1] == \
        f"console=ttyS0 panic=-1 loglevel=4 spinlab.region=1 spinlab.stream=0 {APPEND}"
    assert any('"driver":"virtserialport"' in a and '"name":"org.spinlab.control"' in a for a in argv), argv
    assert "-nodefaults" in argv and not any("netdev" in a or a.startswith("-nic") for a in argv), argv
    assert info["vcpu_thread_ids"] and len(set(info["vcpu_thread_ids"])) == 2
    console = run_dir / "vm" / name / "console.log"
    wait_for(lambda: "control channel /dev/vport" in console.read_text(errors="replace"), 180,
             "the agent to open its control channel")
    text = console.read_text(errors="replace")
    assert f"lock {lock}; control channel /dev/vport" in text, text[-2000:]
    i = collect("info", "--vm", name, "--timeout", "10000")
    assert i.returncode == 0, i.stderr
    for line in (f"lock algorithm         {lock}", f"hypervisor             {hypervisor}",
                 "CPUs                   2", f"build                  linux {release}"):
        assert line in i.stdout, (line, i.stdout)

    def waits():   # a class is listed once it has counted a wait
        r = collect("query", "--vm", name, "--format", "json", "--timeout", "10000")
        assert r.returncode == 0, r.stderr
        q = json.loads(r.stdout)
        return q["classes"] and q
    q = wait_for(waits, 60, "the region to count waits")
    assert [c["name"] for c in q["classes"]] == ["spinlock_slowpath"], q   # the name from the agent
    print(f"\n{lock}: {q['classes'][0]['merged']['acquisitions']} waits counted")


def test_start_a_linux_guest_under_libvirt_query_its_agent_and_stop(libvirtd, run_dir, vm_name, linux_image):
    """The native queued spinlock (mcs): the domain's <cpu> disables the hypervisor bit."""
    r = vm("start", vm_name, "--guest", "linux", "--lock", "mcs", "--backend", "libvirt", "--accel", "tcg",
           "--cpus", "2", "--append", APPEND, "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["backend"] == "libvirt" and info["guest"] == "linux" and info["domain"] == f"spinlab-{vm_name}"
    check_the_guest(run_dir, vm_name, info, "mcs", "max,hypervisor=off", "none", linux_image)
    assert vm("stop", vm_name).returncode == 0
    assert not domain_exists(vm_name)   # destroyed and undefined
    wait_for(lambda: nothing_left(run_dir, vm_name) and not pid_alive(info["qemu_pid"]), 10,
             "QEMU, the state directory and the shm file to go")


def test_run_a_linux_guest_under_libvirt_and_sigterm_it(libvirtd, run_dir, vm_name, linux_image):
    """virt_spin_lock's test-and-set (tas): the CPU keeps the hypervisor bit. `run` never ends by
    itself (spinlab.seconds=0): SIGTERM stops it, and it takes the domain with it."""
    p = subprocess.Popen([SPINLAB_VM, "run", vm_name, "--guest", "linux", "--lock", "tas", "--backend", "libvirt",
                          "--accel", "tcg", "--cpus", "2", "--append", APPEND, "--quiet"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        info = running_info(run_dir, vm_name)
        check_the_guest(run_dir, vm_name, info, "tas", "max", "TCGTCGTCGTCG", linux_image)
        assert domain_exists(vm_name)
    finally:
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGTERM, err
    assert "SIGTERM: stopping the VM" in err, err
    assert not domain_exists(vm_name)
    wait_for(lambda: nothing_left(run_dir, vm_name) and not pid_alive(info["qemu_pid"]), 10,
             "QEMU, the state directory and the shm file to go")
