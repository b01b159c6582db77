"""A real one-node Slurm cluster on this machine, for tests: munged, slurmctld and slurmd from
Debian's slurm-wlm and munge, all state in one temporary directory.

Every daemon gets PR_SET_PDEATHSIG, so a killed test process takes them along; stop() ends them,
cancels what is queued and removes the directory, and runs however the test ended.
"""
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

PR_SET_PDEATHSIG = 1


def _die_with_parent():
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    os.setsid()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


CONF = """\
ClusterName=spinlabtest
SlurmctldHost={host}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={dir}/munge.socket
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MinJobAge=600
NodeName={host} CPUs={cpus} RealMemory=4096 State=UNKNOWN
PartitionName=spinlab Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


class SlurmCluster:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="spinlab-slurm-")
        os.chmod(self.dir, 0o755)
        self.procs = []
        self.host = socket.gethostname().split(".")[0]
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.env = dict(os.environ, SLURM_CONF=self.conf)

    def _spawn(self, name, cmd):
        log = open(os.path.join(self.dir, f"{name}.out"), "w")
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env, preexec_fn=_die_with_parent)
        self.procs.append((name, p))
        return p

    def start(self, timeout=60):
        for sub in ("state", "spool", "munge"):
            os.makedirs(os.path.join(self.dir, sub), mode=0o700)
        key = os.path.join(self.dir, "munge", "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        self._spawn("munged", ["munged", "--foreground", "--force", f"--key-file={key}",
                               f"--socket={self.dir}/munge.socket", f"--pid-file={self.dir}/munged.pid",
                               f"--seed-file={self.dir}/munge/seed", f"--log-file={self.dir}/munged.log"])
        self._wait(lambda: os.path.exists(f"{self.dir}/munge.socket"), timeout, "munged's socket")
        with open(self.conf, "w") as f:
            f.write(CONF.format(host=self.host, dir=self.dir, ctld_port=_free_port(), d_port=_free_port(),
                                cpus=os.cpu_count()))
        self._spawn("slurmctld", ["slurmctld", "-D", "-c", "-f", self.conf])
        self._spawn("slurmd", ["slurmd", "-D", "-f", self.conf])
        self._wait(self._node_idle, timeout, "the node to become idle")
        return self

    def _node_idle(self):
        r = subprocess.run(["sinfo", "-h", "-o", "%t"], env=self.env, capture_output=True, text=True)
        return r.returncode == 0 and r.stdout.strip() in ("idle", "mix", "alloc")

    def _wait(self, ok, timeout, what):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for name, p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError(f"{name} exited ({p.returncode}) while waiting for {what}: {self.logs()}")
            if ok():
                return
            time.sleep(0.3)
        raise RuntimeError(f"timed out after {timeout} s waiting for {what}: {self.logs()}")

    def logs(self) -> str:
        out = []
        for name in ("munged.out", "slurmctld.log", "slurmd.log", "slurmctld.out", "slurmd.out"):
            path = os.path.join(self.dir, name)
            if os.path.exists(path):
                out.append(f"--- {name}\n" + open(path, errors="replace").read()[-1500:])
        return "\n".join(out)

    def stop(self):
        subprocess.run(["scancel", "--full", "--user", "root"], env=self.env, capture_output=True, timeout=30)
        for name, p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.procs.clear()
        shutil.rmtree(self.dir, ignore_errors=True)
