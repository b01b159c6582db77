"""The guest the real-guest test files boot: the kernel under TCG with lockbench on 2 vCPUs,
started through spinlab-vm in a run directory of its own, stopped and removed afterwards."""
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
COLLECT = os.path.join(ROOT, "build", "host", "bin", "spinlab-collect")
VM = os.path.join(ROOT, "vm-images", "spinlab-vm")


@contextlib.contextmanager
def lockbench_guest(prefix: str, boot_options: str = "",
                    lockbench_args: str = "--duration-ms 0 --locks 2 --pattern random"):
    """Yields {name, env, run_dir, state} of a running guest; `spinlab-vm stop` at the end.
    boot_options go before init= (which takes the rest of the line)."""
    for p in (COLLECT, os.path.join(ROOT, "build", "kernel", "spinlab.elf")):
        if not os.path.exists(p):
            pytest.fail(f"{p} missing: run `make build` first")
    run_dir = tempfile.mkdtemp(prefix=f"spinlab-{prefix}-")
    env = dict(os.environ, SPINLAB_RUN_DIR=run_dir)
    name = f"{prefix}{os.getpid()}"
    try:
        subprocess.run([VM, "start", name, "--cpus", "2", "--accel", "tcg",
                        "--append", (boot_options + " " if boot_options else "")
                        + "init=/bin/lockbench " + lockbench_args],
                       env=env, check=True, stdout=subprocess.DEVNULL)
        state = json.load(open(os.path.join(run_dir, "vm", name, "vm.json")))
        wait_until_it_answers(name, env, run_dir)
        yield {"name": name, "env": env, "run_dir": run_dir, "state": state}
    finally:
        subprocess.run([VM, "stop", name], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(run_dir, ignore_errors=True)


def wait_until_it_answers(name: str, env: dict, run_dir: str, limit_s: float = 120):
    """Polls `trace status` until the guest's channel answers. A query sent before the guest's
    handler runs is never answered, so each poll waits 1 s, not the tests' 20 s: under TCG the
    guest answers ~2 s after QEMU starts."""
    deadline = time.time() + limit_s
    while subprocess.run([COLLECT, "trace", "status", "--vm", name, "--run-dir", run_dir, "--timeout", "1000"],
                         env=env, capture_output=True, timeout=60).returncode != 0:
        if time.time() > deadline:
            pytest.fail(f"the guest {name} did not answer on its channel within {limit_s:.0f} s")
        time.sleep(0.3)
