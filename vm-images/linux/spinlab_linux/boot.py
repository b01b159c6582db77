"""One run of the Linux guest: QEMU started, the agent's stream read and checked, QEMU always
stopped.

The stream travels over a virtio-serial port (virtserialport name org.spinlab.waits) whose
chardev is a Unix socket this process listens on: QEMU connects at start-up, a reader thread
keeps every byte (stream.bin) and, once a complete trailer frame has arrived, answers the
guest with one byte (records.ACK), so the guest powers off only after the host has its data.
COM1 goes to console.log. Nothing outlives run_guest(): QEMU runs in its own process group
with PR_SET_PDEATHSIG=SIGKILL (it dies with us, however we die), and a finally clause kills it
and removes the temporary folder on every exit, Ctrl-C and SIGTERM (the CLI turns SIGTERM into
an exception) included.

Beside the guest, on request:
- the clock (cfg.clock): a second port, org.spinlab.clock, whose chardev is a Unix socket QEMU
  listens on; the host helper spinlab-linux-clock (clock.py) pings the agent through it every
  10 ms and writes clock.csv; run_guest writes clock.json (the points, their brackets);
- the host timeline (cfg.timeline) and freezes (cfg.freeze): `spinlab-load timeline` and
  `spinlab-load freeze` (hostload.py), started once the agent's META frame has arrived (the
  agent waits for a go byte, spinlab.go=1), ready (their --ready-file) before the go byte is
  sent, and stopped with SIGINT (freeze first) as soon as the workload is over (the first
  frame after META) or QEMU ends; they write timeline.csv and freezes.csv.
Each of them is stopped in the same finally clause, on every exit.
"""
import csv
import ctypes
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import qemu_launch  # vm-images/ (PYTHONPATH: spinlab-linux and the tests' pytest.ini set it)

from . import clock, clockfit, fetch, hostload, modes, paths, records

PORT_NAME = "org.spinlab.waits"
CONTROL_PORT_NAME = "org.spinlab.control"   # spinlab.region=1: the control channel (agent.c)
QEMU = "qemu-system-x86_64"
PR_SET_PDEATHSIG = 1
_VCPU_COMM = re.compile(r"CPU (\d+)/(TCG|KVM)")


class GuestError(Exception):
    """A run that did not give a complete, checked stream. .partial: the records.GuestRun read
    before the problem (None when nothing was); .console: the console log's path."""

    def __init__(self, message, partial=None, console=None):
        super().__init__(message)
        self.partial = partial
        self.console = console


@dataclass
class GuestConfig:
    kernel: str = None            # None: build/linux/kernel.json's boot_kernel (the PVH vmlinux)
    initrd: str = None            # None: build/linux/initramfs.cpio.gz
    cpus: int = 2
    memory_mb: int = 512
    accel: str = "tcg"            # tcg, kvm or auto
    mode: str = "tas"             # native, tas or pv (modes.py)
    workload: str = "hackbench"   # hackbench, forkexec, idle, probecost, gt, tscread
    seconds: float = 5.0
    trace: bool = True
    buffer_kb: int = 8192         # per CPU
    hackbench: str = None         # GROUPSxLOOPS, e.g. 2x20
    workers: int = None           # forkexec processes (default: two per vCPU)
    ab_phases: int = 0            # >0: probes off and on in turn over this many phases (even)
    append: list = field(default_factory=list)   # more kernel parameters
    cpu_flags: list = field(default_factory=list)  # appended to -cpu, e.g. ["-cx16"]
    timeout_s: float = None       # None: 120 s + 4 x seconds
    gt: str = None                # workload gt: HOLDER_CPU,HOLD_US,GAP_US[,WAITER_GAP_US]
    clock: bool = False           # the clock port and spinlab-linux-clock: clock.json
    clock_period_ms: float = 10.0
    timeline: bool = False        # spinlab-load timeline beside the guest: timeline.csv
    freeze: dict = None           # {"vcpus": [1], "freeze_ms": 30, "period_ms": 100}:
                                  # spinlab-load freeze beside the guest: freezes.csv
    region: str = None            # a file for spinlab's shared region (the caller's: made with
                                  # region_mb, never removed here); the agent then lays it out,
                                  # counts each wait into it live and publishes its clock there
    region_mb: int = 16
    control_socket: str = None    # with region: the control channel's socket (QEMU listens; the
                                  # host's tools connect), default control.sock in the run's
                                  # temporary folder
    tsc_spacing: int = None       # tscread: ALU iterations between TSC reads (agent default 1000)

    @property
    def go(self):
        """The agent waits for the host's go byte: the host recorders start first."""
        return bool(self.timeline or self.freeze)


# The guest kernel's console and panic words, whoever boots it (spinlab-vm --guest linux too).
BASE_WORDS = ("console=ttyS0", "panic=-1", "loglevel=4")


def kernel_append(cfg, mode_words):
    words = [*BASE_WORDS,
             f"spinlab.seconds={cfg.seconds:g}", f"spinlab.workload={cfg.workload}",
             f"spinlab.trace={1 if cfg.trace else 0}", f"spinlab.bufkb={cfg.buffer_kb}"]
    if cfg.hackbench:
        words.append(f"spinlab.hackbench={cfg.hackbench}")
    if cfg.workers:
        words.append(f"spinlab.workers={cfg.workers}")
    if cfg.ab_phases:
        words.append(f"spinlab.abphases={cfg.ab_phases}")
    if cfg.gt:
        words.append(f"spinlab.gt={cfg.gt}")
    if cfg.clock:
        words.append("spinlab.clock=1")
    if cfg.region:
        words.append("spinlab.region=1")
    if cfg.tsc_spacing is not None:
        words.append(f"spinlab.tscspacing={cfg.tsc_spacing}")
    if cfg.go:
        words.append("spinlab.go=1")
    return " ".join(words + list(mode_words) + list(cfg.append))


def qemu_argv(cfg, accel, socket_path, console_path, name, qemu=QEMU, clock_socket=None,
              control_socket=None):
    """QEMU's argv for cfg under accel ('tcg' or 'kvm'); clock_socket: the clock port's socket
    (QEMU listens on it), when cfg.clock; control_socket: the control channel's, with
    cfg.region."""
    mode_qemu, mode_words = modes.lock_mode_args(cfg.mode, accel)
    if cfg.cpu_flags:
        i = mode_qemu.index("-cpu") + 1
        mode_qemu[i] = ",".join([mode_qemu[i], *cfg.cpu_flags])
    return [qemu, "-name", f"{name},debug-threads=on", "-M", "q35",
            "-m", str(cfg.memory_mb), "-smp", str(cfg.cpus),
            "-nographic", "-monitor", "none", "-vga", "none", "-nic", "none", "-no-reboot",
            "-chardev", f"file,id=con,path={_esc(console_path)}", "-serial", "chardev:con",
            "-bios", qemu_launch.QBOOT, "-kernel", str(cfg.kernel), "-initrd", str(cfg.initrd),
            "-append", kernel_append(cfg, mode_words), *mode_qemu,
            "-device", "virtio-serial-pci,id=vser",
            "-chardev", f"socket,id=waits,path={_esc(socket_path)}",
            "-device", f"virtserialport,bus=vser.0,chardev=waits,name={PORT_NAME}"] + (
            ["-chardev", f"socket,id=clock,path={_esc(clock_socket)},server=on,wait=off",
             "-device", f"virtserialport,bus=vser.0,chardev=clock,name={clock.PORT_NAME}"]
            if cfg.clock else []) + (
            # spinlab's region as spinlab-vm gives it to spinlab's kernel (spinlab_vm/qemu.py)
            ["-object", f"memory-backend-file,id=spinlab-shm,share=on,mem-path={_esc(cfg.region)},"
                        f"size={cfg.region_mb}M",
             "-device", "ivshmem-plain,memdev=spinlab-shm",
             "-chardev", f"socket,id=control,path={_esc(control_socket)},server=on,wait=off",
             "-device", f"virtserialport,bus=vser.0,chardev=control,name={CONTROL_PORT_NAME}"]
            if cfg.region else [])


def _esc(value):
    return str(value).replace(",", ",,")


def resolve_accel(requested):
    """'tcg' or 'kvm' (qemu_launch.choose_accel; ValueError for an unusable explicit kvm)."""
    return qemu_launch.choose_accel(requested)


def vcpu_threads(pid, task_root="/proc"):
    """{vCPU index: host thread id} from QEMU's thread names ('CPU 1/TCG', 'CPU 0/KVM', given
    with -name ...,debug-threads=on; as vm-images/spinlab_vm/libvirt.py thread_ids)."""
    found = {}
    try:
        tids = os.listdir(f"{task_root}/{pid}/task")
    except OSError:
        return found
    for tid in tids:
        try:
            comm = Path(f"{task_root}/{pid}/task/{tid}/comm").read_text().strip()
        except OSError:
            continue
        m = _VCPU_COMM.fullmatch(comm)
        if m:
            found[int(m[1])] = int(tid)
    return found


TMP_DIR = "/tmp"
TMP_PREFIX = "sllx"


def sweep_stale_tmp(tmp_dir=TMP_DIR):
    """Remove the temporary folders of runs whose process is gone (a SIGKILLed run cannot
    remove its own); returns the folders removed."""
    removed = []
    for d in Path(tmp_dir).glob(f"{TMP_PREFIX}*-*"):
        m = re.fullmatch(rf"{TMP_PREFIX}(\d+)-\w+", d.name)
        if not m or not d.is_dir() or d.owner() != _me():
            continue
        try:
            os.kill(int(m[1]), 0)
            continue                      # its run is alive
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        shutil.rmtree(d, ignore_errors=True)
        removed.append(str(d))
    return removed


def _me():
    import pwd
    return pwd.getpwuid(os.getuid()).pw_name


def _tied_child():
    # Between fork and exec: own process group (a terminal's Ctrl-C reaches only us, and we
    # stop QEMU), and SIGKILL when we die, however we die.
    os.setpgid(0, 0)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


class _Reader(threading.Thread):
    """Reads the stream from QEMU's socket; acknowledges a complete trailer frame."""

    def __init__(self, conn, out_path, t0):
        super().__init__(daemon=True)
        self.conn, self.out_path, self.t0 = conn, out_path, t0
        self.data = bytearray()
        self.first_frame_s = None   # host seconds from QEMU's start to the META frame
        self.frame_types = []       # of the complete frames so far (a second: the workload is over)
        self.acked = False
        self.error = None
        self._scan = 0
        self._unreadable = False

    def _scan_frames(self):
        d = self.data
        while not self._unreadable and self._scan + records.HEADER_SIZE <= len(d):
            magic, _, ftype, _, length, _ = records.HEADER.unpack_from(d, self._scan)
            if magic != records.MAGIC or length > records.MAX_PAYLOAD:
                self._unreadable = True   # stop scanning; parse() will say what is wrong
                return
            end = self._scan + records.HEADER_SIZE + length
            if end > len(d):
                return
            if self.first_frame_s is None:
                self.first_frame_s = time.monotonic() - self.t0
            self.frame_types.append(ftype)
            if ftype == records.TRAILER and not self.acked and records.trailer_seen(d[self._scan:end]):
                self.conn.sendall(records.ACK)
                self.acked = True
            self._scan = end

    def run(self):
        try:
            with open(self.out_path, "wb") as f:
                while True:
                    chunk = self.conn.recv(1 << 16)
                    if not chunk:
                        break
                    f.write(chunk)
                    self.data.extend(chunk)
                    self._scan_frames()
        except OSError as e:
            self.error = e


def _lstat_mode(path):
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0


def _tail(path, n=30):
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-n:])


def run_guest(cfg, out_dir, log=None):
    """Boot the guest as cfg says, collect and check its stream, write out_dir/{summary.json,
    waits.csv, stream.bin, console.log, qemu.log} (and clock.csv, clock.json, timeline.csv,
    freezes.csv and the recorders' logs when cfg asks for them). Returns (the summary.json dict,
    the records.GuestRun). Raises GuestError (with .partial) when the guest's stream is missing,
    bad or incomplete, when the guest ran another lock mode than asked, or when a host recorder
    could not start; modes.ModeError for a mode the accelerator cannot give; ValueError for an
    unusable --accel kvm."""
    log = log or (lambda msg: None)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if cfg.kernel is None or cfg.initrd is None:
        kernel = fetch.load_kernel_json()
        cfg.kernel = cfg.kernel or fetch.boot_kernel(kernel)
        cfg.initrd = cfg.initrd or str(paths.initramfs_path())
    for what in ("kernel", "initrd"):
        if not Path(getattr(cfg, what)).is_file():
            raise GuestError(f"no {what} at {getattr(cfg, what)} (run spinlab-linux fetch and "
                             f"spinlab-linux initramfs)")
    if cfg.workload == "gt" and not cfg.gt:
        raise GuestError("workload gt needs cfg.gt (HOLDER_CPU,HOLD_US,GAP_US)")
    accel = resolve_accel(cfg.accel)
    modes.lock_mode_args(cfg.mode, accel)          # refuse pv under TCG before starting
    helper = None
    if cfg.clock:
        try:
            helper = clock.build_helper()
        except clock.ClockError as e:
            raise GuestError(str(e))
    timeout = cfg.timeout_s or 120 + 4 * cfg.seconds
    console_path = out_dir / "console.log"
    stream_path = out_dir / "stream.bin"
    name = f"spinlab-linux-{os.getpid()}"
    sweep_stale_tmp()
    # short: a socket path has 107 bytes; the pid lets a later run remove it after a SIGKILL
    tmp = tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-", dir=TMP_DIR)
    sock_path = os.path.join(tmp, "waits.sock")
    clock_sock = os.path.join(tmp, "clock.sock")
    control_sock = cfg.control_socket or os.path.join(tmp, "control.sock")
    argv = qemu_argv(cfg, accel, sock_path, console_path, name, clock_socket=clock_sock,
                     control_socket=control_sock)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    proc = conn = reader = clock_proc = None
    recorders = []            # hostload.Recorder, in the order they are stopped
    host = {}                 # what the host recorders did (summary.json "host")
    try:
        listener.bind(sock_path)
        listener.listen(1)
        listener.settimeout(0.2)
        qemu_log = open(out_dir / "qemu.log", "wb")
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=qemu_log,
                                    stderr=qemu_log, preexec_fn=_tied_child)
        except OSError as e:
            raise GuestError(f"cannot run {argv[0]}: {e.strerror}")
        finally:
            qemu_log.close()
        log(f"QEMU pid {proc.pid}: {accel}, {cfg.cpus} vCPUs, lock mode {cfg.mode}, "
            f"{cfg.workload} for {cfg.seconds:g} s")
        while conn is None:
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                if proc.poll() is not None:
                    raise GuestError(f"QEMU exited with status {proc.returncode} before it "
                                     f"connected: {_tail(out_dir / 'qemu.log', 10)}")
                if time.monotonic() - t0 > 30:
                    raise GuestError("QEMU did not connect the virtio-serial socket in 30 s")
        reader = _Reader(conn, stream_path, t0)
        reader.start()
        if cfg.clock:
            with open(out_dir / "clock-helper.log", "wb") as hl:
                clock_proc = subprocess.Popen(
                    clock.helper_argv(helper, clock_sock, out_dir / "clock.csv",
                                      out_dir / "clock-helper.json", cfg.clock_period_ms),
                    stdin=subprocess.DEVNULL, stdout=hl, stderr=hl, preexec_fn=_tied_child)
        threads = {}
        while len(threads) < cfg.cpus and proc.poll() is None and time.monotonic() - t0 < 10:
            threads = vcpu_threads(proc.pid)
            if len(threads) < cfg.cpus:
                time.sleep(0.02)
        phase = "go" if cfg.go else "run"     # go: waiting for META; stop: recorders to stop
        status = None
        while status is None:
            try:
                status = proc.wait(timeout=0.1 if phase != "run" else 0.5)
            except subprocess.TimeoutExpired:
                if time.monotonic() - t0 > timeout:
                    raise GuestError(f"the guest did not power off within {timeout:g} s; "
                                     f"console:\n{_tail(console_path)}", _partial(reader),
                                     console_path)
                stuck = _qemu_stopped_guest(out_dir / "qemu.log")
                if stuck:
                    raise GuestError(f"QEMU stopped the guest: {stuck} (qemu.log):\n"
                                     f"{_tail(out_dir / 'qemu.log', 12)}", _partial(reader),
                                     console_path)
                types = reader.frame_types
                if phase == "go" and types and types[0] == records.META and \
                        records.ERROR not in types:
                    recorders = _start_recorders(cfg, proc, out_dir, tmp, host, log)
                    try:
                        host["ready_s"] = hostload.wait_ready(
                            recorders, 60, alive=lambda: proc.poll() is None)
                    except hostload.HostLoadError as e:
                        raise GuestError(str(e), _partial(reader), console_path)
                    conn.sendall(records.GO)
                    host["go_s"] = time.monotonic() - t0
                    log(f"host recorders ready in {host['ready_s']:.2f} s "
                        f"({', '.join(r.name for r in recorders)}); go")
                    phase = "stop"
                elif phase == "stop" and len(types) >= 2:
                    _stop_recorders(recorders, host, log)   # the workload is over
                    phase = "run"
        wall = time.monotonic() - t0
        reader.join(timeout=10)
    finally:
        _stop_recorders(recorders, host, log)
        if proc is not None and proc.poll() is None:
            _stop(proc)
        if clock_proc is not None:
            _stop(clock_proc)
            host["clock_helper_status"] = clock_proc.returncode
        for s in (conn, listener):
            if s is not None:
                s.close()
        if reader is not None:
            reader.join(timeout=5)
        shutil.rmtree(tmp, ignore_errors=True)
        if cfg.control_socket and stat.S_ISSOCK(_lstat_mode(cfg.control_socket)):
            os.unlink(cfg.control_socket)   # QEMU's listening socket outlives it

    data = bytes(reader.data)
    try:
        run = records.parse(data)
    except records.StreamError as e:
        raise GuestError(f"the guest's stream is bad: {e}; QEMU exit status {status}; console:\n"
                         f"{_tail(console_path)}", e.partial, console_path)
    if status != 0:
        raise GuestError(f"QEMU exited with status {status}; console:\n{_tail(console_path)}",
                         run, console_path)
    observed = modes.observed_mode(run.meta)
    if observed != cfg.mode:
        raise GuestError(f"asked for lock mode {cfg.mode}, the guest's kernel chose {observed} "
                         f"(hypervisor bit {run.meta['hypervisor_flag']}, "
                         f"'{run.meta['pv_spinlocks_line']}')", run, console_path)
    if (cfg.trace and cfg.workload != "probecost"
            and run.meta["symbol"] != modes.expected_symbol(cfg.mode)):
        raise GuestError(f"lock mode {cfg.mode} runs {modes.expected_symbol(cfg.mode)}, the "
                         f"agent probed {run.meta['symbol']}", run, console_path)
    if run.meta["ncpus"] != cfg.cpus:
        raise GuestError(f"the guest has {run.meta['ncpus']} CPUs online, not {cfg.cpus}",
                         run, console_path)

    result = {
        "config": asdict(cfg),
        "accel": accel,
        "lock_mode": cfg.mode,
        "observed_lock_mode": observed,
        "qemu_argv": argv,
        "qemu_pid": proc.pid,
        "vcpu_threads": {str(k): v for k, v in sorted(threads.items())},
        "host_wall_s": wall,
        "host_to_first_frame_s": reader.first_frame_s,
        "guest_uptime_at_agent_s": run.meta["uptime_at_start_s"],
        "meta": run.meta,
        "trailer": run.trailer,
        "summary": records.summary(run) if run.cpus else None,
    }
    if cfg.clock:
        try:
            host["clock"] = write_clock_json(out_dir, run, cfg.clock_period_ms)
        except clock.ClockError as e:
            raise GuestError(f"the clock points are bad: {e}", run, console_path)
    if host:
        result["host"] = host
    write_waits_csv(out_dir / "waits.csv", run.waits)
    if run.holds:
        write_holds_csv(out_dir / "holds.csv", run.holds)
    fetch.write_json(out_dir / "summary.json", result)
    return result, run


def _start_recorders(cfg, proc, out_dir, tmp, host, log):
    """spinlab-load freeze and timeline for QEMU proc (hostload.py); the list in stop order."""
    started = []
    if cfg.freeze:
        p = cfg.freeze
        started.append(hostload.Recorder(
            "freeze", hostload.freeze_argv(
                proc.pid, p.get("vcpus", [1]), p.get("freeze_ms", 30), p.get("period_ms", 100),
                out_dir / "freezes.csv", os.path.join(tmp, "freeze.ready"),
                out_dir / "freeze-latency.json", p.get("rt_priority", 10)),
            os.path.join(tmp, "freeze.ready"), out_dir / "spinlab-load-freeze.log"))
    if cfg.timeline:
        started.append(hostload.Recorder(
            "timeline", hostload.timeline_argv(
                proc.pid, out_dir / "timeline.csv", os.path.join(tmp, "timeline.ready"),
                out_dir / "freezes.csv" if cfg.freeze else None),
            os.path.join(tmp, "timeline.ready"), out_dir / "spinlab-load-timeline.log"))
    # timeline first: it must see the first freeze; freeze stops first (below)
    for r in reversed(started):
        try:
            r.start()
        except hostload.HostLoadError as e:
            raise GuestError(str(e))
        log(f"spinlab-load {r.name} pid {r.proc.pid}")
    host["recorders"] = {}
    return started


def _stop_recorders(recorders, host, log):
    """Stop each recorder still running, in order (freeze, then timeline)."""
    for r in recorders:
        if r.proc is not None and r.returncode is None:
            rc = r.stop()
            host.setdefault("recorders", {})[r.name] = r.summary()
            log(f"spinlab-load {r.name} stopped: status {rc}")


def write_clock_json(out_dir, run, period_ms=None):
    """clock.json from the helper's clock.csv (every row checked) and its stats: the points,
    their brackets (median, p99, ...), the points a map is fitted through (clock.fit_points)
    and clockfit's report of that map. Returns its summary part (no points)."""
    out_dir = Path(out_dir)
    points = clock.read_points(out_dir / "clock.csv")
    stats = clock.read_helper_stats(out_dir / "clock-helper.json") or {}
    hz = stats.get("host_tsc_hz") or None
    summary = {"points": len(points), "period_ms": period_ms, "helper": stats,
               "host_tsc_hz": hz, "bracket_cycles": clock.bracket_stats(points, hz),
               "offset": clock.offset_stats(points),
               "guest_answers": (run.trailer or {}).get("clock", {}).get("answers")}
    fitted = clock.fit_points(points, hz) if hz else points
    if len(fitted) >= 2:
        try:
            summary["fit"] = dict(clockfit.fit(fitted).report(), rule=(
                f"the narrowest point of each {clock.FIT_WINDOW_MS} ms among those with a "
                f"bracket within max({clock.FIT_MAX_BRACKET_MS:g} ms, twice the 10th percentile)"))
        except ValueError as e:
            raise clock.ClockError(f"the clock points do not fit: {e}", points)
    fetch.write_json(out_dir / "clock.json", dict(summary, columns=list(clock.HEADER.split(",")),
                                                   points=[list(p) for p in points]))
    return summary


def write_holds_csv(path, holds):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["cpu", "holder", "acquire_tsc", "release_tsc", "cycles"])
        for h in holds:
            w.writerow([h.cpu, int(h.holder), h.acquire, h.release, h.release - h.acquire])


def _qemu_stopped_guest(qemu_log):
    """The line of QEMU's log that says it paused the guest for good (a KVM internal error,
    an emulation failure), or None. QEMU then waits forever instead of exiting."""
    try:
        text = Path(qemu_log).read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if "KVM internal error" in line or "emulation failure" in line:
            return line.strip()
    return None


def _partial(reader):
    if reader is None:
        return None
    try:
        return records.parse(bytes(reader.data))
    except records.StreamError as e:
        return e.partial


def _stop(proc):
    """SIGTERM to QEMU (it exits cleanly), SIGKILL after 3 s."""
    try:
        proc.terminate()
        proc.wait(timeout=3)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    except ProcessLookupError:
        pass


def write_waits_csv(path, waits):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["cpu", "depth", "lock", "start_tsc", "end_tsc", "cycles"])
        for x in waits:
            w.writerow([x.cpu, x.depth, f"{x.lock:#x}", x.start, x.end, x.cycles])
