"""A minimal QMP client: connect, negotiate, execute one command at a time.

QMP speaks JSON lines over the socket: a greeting, then `qmp_capabilities`, then commands whose
replies are {"return": ...} or {"error": {...}}; asynchronous {"event": ...} lines may arrive in
between and are skipped.
"""
import json
import socket
import time


class QmpError(Exception):
    pass


class Qmp:
    def __init__(self, path, timeout=10.0, alive=None):
        """Connect to the QMP socket at path, retrying until timeout while alive() holds."""
        deadline = time.monotonic() + timeout
        while True:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(max(1.0, timeout))
            try:
                self.sock.connect(str(path))
                break
            except (FileNotFoundError, ConnectionRefusedError):
                self.sock.close()
                if time.monotonic() > deadline:
                    raise QmpError(f"no QMP at {path} after {timeout:.0f} s")
                if alive is not None and not alive():
                    raise QmpError("QEMU exited before its QMP socket answered")
                time.sleep(0.05)
        self.buf = b""
        # QMP greets first, but once in a loaded test run QEMU 7.2 sent a RESUME event ahead of
        # the greeting (an event emitted at start-up, before anyone had connected, that waited
        # in the monitor's output). Events before the greeting are skipped like any other.
        greeting = self._read()
        for _ in range(64):
            if "event" not in greeting:
                break
            greeting = self._read()
        if "QMP" not in greeting:
            raise QmpError(f"unexpected QMP greeting: {greeting}")
        self.execute("qmp_capabilities")

    def _read(self):
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise QmpError("QMP connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def execute(self, command, arguments=None):
        msg = {"execute": command}
        if arguments:
            msg["arguments"] = arguments
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            reply = self._read()
            if "event" in reply:
                continue
            if "error" in reply:
                raise QmpError(f"{command}: {reply['error'].get('desc', reply['error'])}")
            return reply.get("return")

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def vcpu_threads(reply):
    """query-cpus-fast reply -> [(vcpu index, host thread id)], ordered by index."""
    threads = sorted((int(c["cpu-index"]), int(c["thread-id"])) for c in reply)
    return threads


def vcpu_apic_ids(q, reply):
    """[APIC id of vCPU index 0, 1, ...] from each CPU object's "apic-id" property (x86): what
    the guest sees as the CPU's local APIC id, so the host can check the guest's CPU numbering
    against QEMU's vCPU indices rather than assume it."""
    return [int(q.execute("qom-get", {"path": c["qom-path"], "property": "apic-id"}))
            for c in sorted(reply, key=lambda c: int(c["cpu-index"]))]


def version_string(reply):
    """query-version reply -> '7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)'."""
    q = reply["qemu"]
    text = f"{q['major']}.{q['minor']}.{q['micro']}"
    package = reply.get("package", "").strip()
    return f"{text} ({package})" if package else text
