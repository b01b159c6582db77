"""Per-VM state: <run-dir>/vm/NAME/ and its vm.json; is the VM alive; removing what is stale.

<run-dir> is run_dir(), the rule every C++ tool follows too (hostlib/run_dir.h;
tests/test_run_dir.py checks that the two agree, paths and refusals):

  $SPINLAB_RUN_DIR            when set and not empty
  /run/spinlab                for root
  $XDG_RUNTIME_DIR/spinlab    for another user, when XDG_RUNTIME_DIR is set and not empty
  /run/user/<uid>/spinlab     when /run/user/<uid> is a directory owned by the user (not a
                              symbolic link): the login's runtime directory, which ssh without a
                              login manager leaves unnamed
  <TMPDIR>/spinlab-<uid>      otherwise; TMPDIR when it is an absolute path, else /tmp. Created
                              0700; one that exists must be a directory (not a symbolic link) of
                              the user's that no one else may write, else run_dir() raises
                              VmError with one sentence naming the path and its owner (/tmp is
                              shared: a directory planted there by another user is never used)

<uid> is the effective user's; a SPINLAB_RUN_DIR is taken as given. One directory per VM,
created with mkdir, so two starts of one name cannot both win:

  control.sock   COM2 chardev socket (server, wait=off): the guest's control channel
  qmp.sock       QMP (qemu backend only; libvirt keeps the monitor to itself)
  console.log    COM1, the kernel console
  shm            symlink to the ivshmem backing file /dev/shm/spinlab-NAME
  qemu.pid       QEMU's process id
  vm.json        everything above plus configuration, vCPU thread ids, start time, QEMU version

A VM is alive while its QEMU process is (pid plus the process start time from /proc, so a reused
pid is not mistaken for it) or, for libvirt, while its domain runs. Before QEMU exists, while the
owner is still setting up, the owner's pid stands for it.
"""
import json
import os
import pwd
import shutil
import stat
import time
import uuid
from pathlib import Path

from .config import VmError, check_name

SHM_DIR = "/dev/shm"
UNIX_PATH_MAX = 107   # sun_path holds 108 bytes with the terminating NUL


RUN_DIR_HINT = ("set SPINLAB_RUN_DIR (or XDG_RUNTIME_DIR, for a user other than root) "
                "to a directory you may write")


def tmp_run_dir(environ, uid):
    """The last resort of a user other than root: <TMPDIR or /tmp>/spinlab-<uid>."""
    tmpdir = environ.get("TMPDIR") or ""
    return Path(tmpdir if tmpdir.startswith("/") else "/tmp") / f"spinlab-{uid}"


def resolve_run_dir(environ, uid, run_user="/run/user"):
    """The rule (hostlib/run_dir.h's resolve_run_dir): where runtime state lives for this
    environment and effective uid; `run_user` is where the logins' runtime directories are."""
    if environ.get("SPINLAB_RUN_DIR"):
        return Path(environ["SPINLAB_RUN_DIR"])
    if uid == 0:
        return Path("/run/spinlab")
    if environ.get("XDG_RUNTIME_DIR"):
        return Path(environ["XDG_RUNTIME_DIR"]) / "spinlab"
    login = Path(run_user) / str(uid)
    try:
        st = os.lstat(login)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == uid:
            return login / "spinlab"
    except OSError:
        pass
    return tmp_run_dir(environ, uid)


def _who(uid):
    """'root (uid 0)', or 'uid 1234' for a uid without a name."""
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = ""
    return f"{name} (uid {uid})" if name else f"uid {uid}"


def claim_tmp_run_dir(path, uid):
    """Makes `path` (the per-user directory under TMPDIR) with mode 0700 when it is not there,
    and checks what is there: "" when it is a directory of uid's that only uid may write (or
    when it cannot be seen at all: creating it later fails and says so), else the sentence
    refusing it (hostlib/run_dir.h's claim_tmp_run_dir, word for word)."""
    try:
        os.mkdir(path, 0o700)
    except OSError:
        pass   # it exists (or a parent may not be written): judged below
    try:
        st = os.lstat(path)
    except OSError:
        return ""
    if stat.S_ISLNK(st.st_mode):
        what = f"it is a symbolic link, owned by {_who(st.st_uid)}"
    elif not stat.S_ISDIR(st.st_mode):
        what = f"it is not a directory; its owner is {_who(st.st_uid)}"
    elif st.st_uid != uid:
        what = f"it is owned by {_who(st.st_uid)}, not by you, {_who(uid)}"
    elif st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        what = f"it is yours, {_who(uid)}, but others may write it (mode {stat.S_IMODE(st.st_mode):04o})"
    else:
        return ""
    return (f"refusing the run directory {path}: {what}, and a run directory someone else controls "
            f"is never used; remove it or {RUN_DIR_HINT}")


def run_dir():
    """The run directory of this process (its environment and effective user); raises VmError
    when the per-user directory under TMPDIR is refused."""
    uid = os.geteuid()
    path = resolve_run_dir(os.environ, uid)
    if not os.environ.get("SPINLAB_RUN_DIR") and path == tmp_run_dir(os.environ, uid):
        why = claim_tmp_run_dir(path, uid)
        if why:
            raise VmError(why)
    return path


def permission_text(e):
    """One line for a PermissionError: the path, and for one under the run directory, the way out."""
    where = e.filename or "?"
    text = f"permission denied: {where}"
    try:
        here = run_dir()
        if Path(where).is_relative_to(here) or here.is_relative_to(Path(where)):
            text += f" (the run directory is {here}: {RUN_DIR_HINT})"
    except (TypeError, ValueError, VmError):
        pass
    return text


def shm_path(name):
    return os.path.join(SHM_DIR, f"spinlab-{name}")


class Paths:
    """Where one VM's files are."""

    def __init__(self, name, base=None):
        check_name(name)
        self.name = name
        self.dir = (Path(base) if base else run_dir()) / "vm" / name
        self.control_socket = self.dir / "control.sock"
        self.qmp_socket = self.dir / "qmp.sock"
        self.console_log = self.dir / "console.log"
        self.shm_link = self.dir / "shm"
        self.pid_file = self.dir / "qemu.pid"
        self.vm_json = self.dir / "vm.json"
        self.shm = shm_path(name)
        for sock in (self.control_socket, self.qmp_socket):
            if len(str(sock)) > UNIX_PATH_MAX:
                raise VmError(f"socket path {sock} is longer than {UNIX_PATH_MAX} bytes: "
                              "use a shorter SPINLAB_RUN_DIR")
        if "," in str(self.dir):
            raise VmError(f"state directory {self.dir} contains a comma, which QEMU options "
                          "cannot carry: use another SPINLAB_RUN_DIR")

    def as_dict(self):
        return {"dir": str(self.dir), "control_socket": str(self.control_socket),
                "qmp_socket": str(self.qmp_socket), "console_log": str(self.console_log),
                "shm": self.shm, "shm_link": str(self.shm_link), "qemu_pid": str(self.pid_file),
                "vm_json": str(self.vm_json)}


def new_instance():
    return uuid.uuid4().hex[:16]


def proc_start_time(pid):
    """The process start time in clock ticks since boot (field 22 of /proc/PID/stat), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    fields = stat[stat.rindex(")") + 2:].split()
    if fields[0] == "Z":   # a zombie has finished; it only waits to be reaped
        return None
    return int(fields[19])


def process_matches(pid, start_time):
    """True when pid runs and is the same process that had start_time."""
    if not pid:
        return False
    now = proc_start_time(pid)
    return now is not None and (start_time is None or now == start_time)


def write_json(path, data):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}   # present but unreadable or half-written: treated as not alive once old


def claim(paths, alive_fn, owner):
    """Create paths.dir for a new VM; returns the initial vm.json dict.

    A directory left by a VM that is gone is cleaned up first; a live one is refused."""
    paths.dir.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(2):
        try:
            os.mkdir(paths.dir, 0o755)
        except FileExistsError:
            info = read_json(paths.vm_json)
            if alive_fn(info, paths):
                pid = (info or {}).get("qemu_pid") or (info or {}).get("owner", {}).get("pid")
                raise VmError(f"VM {paths.name} is already running (pid {pid}): stop it with "
                              f"spinlab-vm stop {paths.name}, or choose another name")
            remove(paths, info)
            continue
        info = {"name": paths.name, "instance": new_instance(), "state": "starting",
                "owner": owner, "paths": paths.as_dict(), "created_unix": time.time()}
        write_json(paths.vm_json, info)
        return info
    raise VmError(f"could not claim {paths.dir}: another spinlab-vm is racing for the name")


def owned_by(paths, instance):
    """True when paths.dir still belongs to this instance (or is already gone)."""
    info = read_json(paths.vm_json)
    return info is not None and info.get("instance") == instance


def remove(paths, info=None):
    """Remove the state directory and the shared-memory file; tolerant of what is missing."""
    shutil.rmtree(paths.dir, ignore_errors=True)
    try:
        os.unlink(paths.shm)
    except FileNotFoundError:
        pass


def list_names(base=None):
    vm_root = (Path(base) if base else run_dir()) / "vm"
    try:
        return sorted(p.name for p in vm_root.iterdir() if p.is_dir())
    except FileNotFoundError:
        return []
