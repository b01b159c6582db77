"""The run directory: Python's rule (spinlab_vm.state.run_dir) and the C++ tools' rule
(hostlib/run_dir.h, printed by `spinlab-load run-dir`) agree for every environment, for root
and for another user."""
import os
import subprocess
from pathlib import Path

import pytest

from spinlab_vm import state

VM_IMAGES = Path(__file__).resolve().parents[1]
SPINLAB_LOAD = os.environ.get("SPINLAB_LOAD", str(VM_IMAGES.parent / "build" / "host" / "bin" / "spinlab-load"))
NOBODY = 65534

ENVIRONMENTS = [
    {},
    {"SPINLAB_RUN_DIR": "/tmp/explicit"},
    {"SPINLAB_RUN_DIR": "/tmp/explicit", "XDG_RUNTIME_DIR": "/run/user/1000"},
    {"XDG_RUNTIME_DIR": "/run/user/1000"},
    {"SPINLAB_RUN_DIR": "", "XDG_RUNTIME_DIR": "/run/user/1000"},
    {"SPINLAB_RUN_DIR": "", "XDG_RUNTIME_DIR": ""},
]


def test_the_rule():
    assert state.resolve_run_dir({}, root=True) == state.Path("/run/spinlab")
    assert state.resolve_run_dir({}, root=False) == state.Path("/run/spinlab")
    xdg = {"XDG_RUNTIME_DIR": "/run/user/1000"}
    assert state.resolve_run_dir(xdg, root=True) == state.Path("/run/spinlab")
    assert state.resolve_run_dir(xdg, root=False) == state.Path("/run/user/1000/spinlab")
    assert state.resolve_run_dir(dict(xdg, SPINLAB_RUN_DIR="/x"), root=False) == state.Path("/x")


def _python_as(env, uid):
    """state.run_dir() in a child with this environment and effective uid."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.environ.clear()
            os.environ.update(env)
            if uid is not None:
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)
            os.write(w, str(state.run_dir()).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        out = f.read()
    os.waitpid(pid, 0)
    return out


def _cxx_as(env, uid):
    extra = {} if uid is None else {"user": uid, "group": uid}
    return subprocess.run([SPINLAB_LOAD, "run-dir"], env=env, capture_output=True, text=True, check=True,
                          timeout=30, **extra).stdout.strip()


@pytest.mark.skipif(not os.path.exists(SPINLAB_LOAD), reason="spinlab-load not built")
@pytest.mark.parametrize("env", ENVIRONMENTS, ids=lambda e: ",".join(f"{k}={v}" for k, v in e.items()) or "none")
def test_python_and_cxx_agree(env):
    users = [None]
    if os.geteuid() == 0:
        if not os.access(SPINLAB_LOAD, os.X_OK, effective_ids=False) or \
                subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                                SPINLAB_LOAD, "--help"], capture_output=True).returncode != 0:
            pytest.skip(f"user {NOBODY} cannot run {SPINLAB_LOAD} (a directory above it is not searchable)")
        users.append(NOBODY)
    for uid in users:
        assert _cxx_as(env, uid) == _python_as(env, uid), f"uid {uid if uid is not None else os.geteuid()}"
