"""Starting, running, stopping and cleaning up VMs, for both backends.

Safety: nothing `run` starts outlives it.
- Normal exit, Ctrl-C, SIGTERM, SIGHUP: the signal becomes an exception (Interrupted), and the
  `finally` of run() stops QEMU (or destroys and undefines the domain) and removes the state
  directory and /dev/shm/spinlab-NAME, with further signals ignored while it does.
- Death of our parent: run() asks for SIGTERM on it (PR_SET_PDEATHSIG), so the same path runs.
- SIGKILL of run itself: QEMU was started with PR_SET_PDEATHSIG=SIGKILL and dies with us; the
  reaper (reaper.py), a process in its own session holding the read end of a pipe whose write
  end only we hold, wakes on end-of-file and removes the state, the shared-memory file and the
  libvirt domain. Only SIGKILL of both run and its reaper leaves state behind: `spinlab-vm
  cleanup` removes it (and `start`/`run` of the same name clean it up first).
"""
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

from . import config, libvirt, qemu, state
from .config import VmError
from .state import Paths

HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
QEMU_EXIT_PASS = 33   # isa-debug-exit: (0x10 << 1) | 1, the kernel's kExitPass
QEMU_EXIT_FAIL = 35   # (0x11 << 1) | 1, kExitFail
VM_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Interrupted(Exception):
    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_interrupted(signum, frame):
    raise Interrupted(signum)


def install_signal_handlers():
    for s in HANDLED_SIGNALS:
        signal.signal(s, _raise_interrupted)


def ignore_signals():
    for s in HANDLED_SIGNALS:
        signal.signal(s, signal.SIG_IGN)


def log(msg):
    print(f"spinlab-vm: {msg}", file=sys.stderr, flush=True)


# ---- liveness ---------------------------------------------------------------------------------

def alive(info, paths):
    """Is the VM described by info (vm.json) still there?"""
    if not info:
        return False
    pid = info.get("qemu_pid")
    if info.get("backend") == "libvirt" and info.get("domain") and libvirt.daemon_running():
        if libvirt.state(info["domain"]) in libvirt.LIVE_STATES:
            return True
        if pid:
            return False
    if pid:
        return state.process_matches(pid, info.get("qemu_start_time"))
    owner = info.get("owner") or {}
    return state.process_matches(owner.get("pid"), owner.get("start_time"))


def describe(info, paths):
    """'running', 'starting' or 'stale' (its QEMU is gone)."""
    if not alive(info, paths):
        return "stale"
    return info.get("state", "running")


# ---- start ------------------------------------------------------------------------------------

def _owner(command):
    pid = os.getpid()
    return {"command": command, "pid": pid, "start_time": state.proc_start_time(pid)}


def prepare(cfg, command):
    """Validate cfg, resolve the accelerator, claim the name. Returns (paths, info, accel)."""
    config.validate(cfg)
    try:
        accel = qemu.qemu_launch.choose_accel(cfg.accel)
    except ValueError as e:
        raise VmError(f"--accel {cfg.accel}: {e}".replace(f"accelerator '{cfg.accel}': ", ""))
    emulator = qemu.qemu_binary()
    if cfg.backend == "libvirt":
        libvirt.require_daemon()
    paths = Paths(cfg.name)
    info = state.claim(paths, alive, _owner(command))
    info.update({"backend": cfg.backend, "accel": accel, "accel_requested": cfg.accel,
                 "cpus": cfg.cpus, "memory_mb": cfg.memory_mb, "append": cfg.append,
                 "kernel": cfg.kernel, "initrd": cfg.initrd or None,
                 "shm_size_mb": cfg.shm_size_mb, "pin": list(cfg.pin) or None,
                 "emulator": emulator, "guest": cfg.guest,
                 "domain": libvirt.domain_name(cfg.name) if cfg.backend == "libvirt" else None})
    if cfg.guest == "linux":
        from . import linux_guest
        info["linux"] = linux_guest.facts(cfg)
    if cfg.backend == "qemu":
        info["paths"]["qemu_log"] = str(paths.dir / "qemu.log")
    else:
        info["paths"]["qmp_socket"] = None   # libvirt owns the monitor
        info["paths"]["domain_xml"] = str(paths.dir / "domain.xml")
    state.write_json(paths.vm_json, info)
    return paths, info, accel


def launch(cfg, paths, info, accel, tied):
    """Start QEMU or the domain for a claimed name; fill in info. Returns the QEMU Popen
    (qemu backend) or None (libvirt)."""
    try:
        os.unlink(paths.shm)   # a leftover of a VM of this name that is gone
    except FileNotFoundError:
        pass
    os.symlink(paths.shm, paths.shm_link)
    proc = None
    if cfg.backend == "qemu":
        argv = qemu.build_argv(cfg, accel, paths, qemu=info["emulator"])
        info["qemu_argv"] = argv
        state.write_json(paths.vm_json, info)
        proc = qemu.spawn(argv, info["paths"]["qemu_log"], tied)
        info["qemu_pid"] = proc.pid
        info["qemu_start_time"] = state.proc_start_time(proc.pid)
        state.write_json(paths.vm_json, info)
        try:
            threads, version, apic_ids = qemu.query(paths, alive=lambda: proc.poll() is None)
        except VmError as e:
            proc.poll()
            raise VmError(f"QEMU failed to start: {_qemu_log_tail(info) or e}")
        for (index, tid), host_cpu in zip(threads, cfg.pin):
            os.sched_setaffinity(tid, {host_cpu})
        info["vcpu_source"] = "qmp query-cpus-fast"
        info["vcpu_apic_ids"] = apic_ids
    else:
        xml = libvirt.render_xml(cfg, accel, paths, info["instance"], emulator=info["emulator"])
        with open(info["paths"]["domain_xml"], "w") as f:
            f.write(xml)
        libvirt.define_and_start(info["paths"]["domain_xml"], info["domain"])
        pid = libvirt.qemu_pid(info["domain"])
        info["qemu_pid"] = pid
        info["qemu_start_time"] = state.proc_start_time(pid) if pid else None
        if pid:
            with open(paths.pid_file, "w") as f:
                f.write(f"{pid}\n")
        info["vcpu_source"] = "virsh vcpuinfo + QEMU thread names"
        try:
            threads = libvirt.vcpu_threads(info["domain"], pid, cfg.cpus)
        except libvirt.GuestEnded as e:
            if not tied:  # start: a VM that is already gone did not start
                raise
            # run: the guest's own result (its console, read when run ends) is the answer
            log(f"{cfg.name}: {e}")
            threads = [(i, None) for i in range(cfg.cpus)]
            info["vcpu_source"] = "none: the guest ended before its vCPU threads were read"
        version = libvirt.qemu_version(info["emulator"])
    if len(threads) != cfg.cpus:
        raise VmError(f"QEMU reports {len(threads)} vCPUs, {cfg.cpus} were asked for")
    info["vcpus"] = [{"index": i, "thread_id": tid,
                      "host_cpu": cfg.pin[i] if cfg.pin else None} for i, tid in threads]
    info["vcpu_thread_ids"] = [tid for _, tid in threads]
    info["qemu_version"] = version
    info["started_unix"] = time.time()
    info["started_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime())
    info["state"] = "running"
    state.write_json(paths.vm_json, info)
    return proc


def _qemu_log_tail(info):
    try:
        with open(info["paths"]["qemu_log"]) as f:
            lines = [ln.strip() for ln in f if ln.strip()]
        return lines[-1] if lines else ""
    except (OSError, KeyError):
        return ""


# ---- teardown ---------------------------------------------------------------------------------

def teardown(paths, info):
    """Stop whatever runs for info and remove the VM's files (only if they are still ours)."""
    info = info or {}
    if info.get("backend") == "libvirt" and info.get("domain"):
        if libvirt.daemon_running():
            libvirt.destroy_and_undefine(info["domain"])
    pid = info.get("qemu_pid")
    if pid and info.get("backend") != "libvirt":
        start = info.get("qemu_start_time")
        qemu.kill(pid, lambda: state.process_matches(pid, start), paths)
    current = state.read_json(paths.vm_json)
    if current is None and not paths.dir.exists():
        # Someone else already removed the directory; the shm file is ours only if no new
        # VM of this name has appeared since.
        state.remove(paths)
    elif current == {} or (current or {}).get("instance") == info.get("instance"):
        state.remove(paths)


def start(cfg):
    """`start`: QEMU (or the domain) runs on after we return. Returns vm.json's content."""
    install_signal_handlers()
    paths, info = None, None
    try:
        paths, info, accel = prepare(cfg, "start")
        launch(cfg, paths, info, accel, tied=False)
        return info
    except BaseException:
        ignore_signals()
        if info is not None:
            teardown(paths, info)
        raise


def stop(name):
    paths = Paths(name)
    info = state.read_json(paths.vm_json)
    if info is None and not paths.dir.exists():
        raise VmError(f"no VM named {name}: {paths.dir} does not exist", config.EXIT_NO_VERDICT)
    was_alive = alive(info, paths)
    teardown(paths, info)
    return was_alive


def cleanup():
    """Remove the state of every VM whose QEMU is gone, and spinlab domains left in libvirt
    without a live VM directory. Returns what was removed, as lines."""
    removed = []
    for name in state.list_names():
        paths = Paths(name)
        info = state.read_json(paths.vm_json)
        if not alive(info, paths):
            teardown(paths, info or {"instance": None})
            state.remove(paths)
            removed.append(f"VM {name}: removed {paths.dir} and {paths.shm}")
    if os.path.exists(libvirt.SOCKET) and libvirt.daemon_running():
        r = libvirt.virsh("list", "--all", "--name", check=False)
        for dom in r.stdout.split():
            if not dom.startswith("spinlab-"):
                continue
            meta = libvirt.virsh("metadata", dom, libvirt.METADATA_NS, check=False)
            if meta.returncode != 0:
                continue   # not defined by spinlab-vm: leave it alone
            name = dom[len("spinlab-"):]
            try:
                paths = Paths(name)
            except VmError:
                continue
            info = state.read_json(paths.vm_json)
            live = (info or {}).get("domain") == dom and alive(info, paths)
            running = libvirt.state(dom) == "running"
            if not live and not (running and info and info.get("state") == "starting"):
                libvirt.destroy_and_undefine(dom)
                if not paths.dir.exists():
                    state.remove(paths)
                removed.append(f"libvirt domain {dom}: destroyed and undefined")
    return removed


# ---- run --------------------------------------------------------------------------------------

class ConsoleTail(threading.Thread):
    """Copies console.log to our stdout as it grows."""

    def __init__(self, path, out):
        super().__init__(daemon=True)
        self.path, self.out = path, out
        self.done = threading.Event()

    def run(self):
        f = None
        while True:
            last = self.done.is_set()
            if f is None:
                try:
                    f = open(self.path, "rb")
                except FileNotFoundError:
                    f = None
            if f is not None:
                data = f.read()
                if data:
                    self.out.write(data.decode(errors="replace"))
                    self.out.flush()
            if last:
                break
            self.done.wait(0.1)
        if f is not None:
            f.close()

    def finish(self):
        self.done.set()
        self.join(timeout=2)


def spawn_reaper(paths, instance):
    """Start the watchdog; returns (its Popen, the pipe's write end we keep open)."""
    r, w = os.pipe()
    base = str(paths.dir.parent.parent)
    env = dict(os.environ, PYTHONPATH=VM_DIR)  # the package beside this one: python3 -m finds it
    proc = subprocess.Popen([sys.executable, "-m", "spinlab_vm.reaper", str(r), base, paths.name,
                             instance], pass_fds=(r,), start_new_session=True, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    os.close(r)
    return proc, w


def guest_status(backend, returncode, console_text):
    """(spinlab-vm exit status, sentence) for how the guest ended."""
    if backend == "qemu":
        if returncode == QEMU_EXIT_PASS:
            return config.EXIT_OK, "guest reported pass (isa-debug-exit 33)"
        if returncode == QEMU_EXIT_FAIL:
            return config.EXIT_GUEST_FAIL, "guest reported failure (isa-debug-exit 35)"
        if returncode is not None and returncode < 0:
            return config.EXIT_NO_VERDICT, (f"QEMU was killed by "
                                            f"{signal.Signals(-returncode).name}")
        return config.EXIT_NO_VERDICT, (f"QEMU exited with status {returncode} "
                                        "without a guest verdict")
    verdict = libvirt.console_verdict(console_text)
    if verdict == 0:
        return config.EXIT_OK, "guest reported pass (console)"
    if verdict == 1:
        return config.EXIT_GUEST_FAIL, "guest reported failure (console)"
    return config.EXIT_NO_VERDICT, "the domain ended without a guest verdict on the console"


def run(cfg, timeout=None, quiet=False, save_console=None, out=sys.stdout):
    """`run`: start, wait for the guest to end (or a signal, or timeout), stop. Exit status.

    save_console: copy console.log there before the state directory is removed."""
    parent = os.getppid()
    qemu.set_pdeathsig(signal.SIGTERM)
    install_signal_handlers()
    if os.getppid() != parent:   # the parent died before the request took effect
        raise Interrupted(signal.SIGTERM)
    paths = info = reaper = reaper_fd = tail = None
    try:
        paths, info, accel = prepare(cfg, "run")
        reaper, reaper_fd = spawn_reaper(paths, info["instance"])
        if not quiet:
            tail = ConsoleTail(paths.console_log, out)
            tail.start()
        proc = launch(cfg, paths, info, accel, tied=True)
        log(f"{cfg.name}: {cfg.cpus} vCPUs, {accel}, {cfg.backend}; vCPU threads "
            f"{info['vcpu_thread_ids']}; state in {paths.dir}")
        deadline = time.monotonic() + timeout if timeout else None
        returncode = None
        while True:
            if proc is not None:
                try:
                    returncode = proc.wait(timeout=0.2)
                    break
                except subprocess.TimeoutExpired:
                    pass
            else:
                if libvirt.state(info["domain"]) not in libvirt.LIVE_STATES:
                    break
                time.sleep(0.25)
            if deadline and time.monotonic() > deadline:
                log(f"{cfg.name}: no end after {timeout:g} s: stopping it")
                return config.EXIT_TIMEOUT
        if tail:
            tail.finish()
            tail = None
        try:
            console = paths.console_log.read_text(errors="replace")
        except OSError:
            console = ""
        status, why = guest_status(cfg.backend, returncode, console)
        log(f"{cfg.name}: {why}")
        return status
    except Interrupted as e:
        log(f"{cfg.name}: {e}: stopping the VM")
        return 128 + e.signum
    finally:
        ignore_signals()
        if tail:
            tail.finish()
        if save_console and paths is not None and paths.console_log.exists():
            try:
                shutil.copyfile(paths.console_log, save_console)
            except OSError as e:
                log(f"{cfg.name}: could not save the console to {save_console}: {e}")
        if info is not None:
            teardown(paths, info)
        if reaper is not None:
            os.close(reaper_fd)     # the reaper wakes, finds nothing of ours left, exits
            try:
                reaper.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
