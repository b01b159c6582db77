"""A SIGTERM (a CI timeout, `kill`) ends the session like Ctrl-C, so each fixture's `finally`
stops its guest: spinlab-vm starts QEMU detached, and a killed pytest left one running (it took
0.4 of a CPU for half an hour)."""
import signal


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


signal.signal(signal.SIGTERM, _interrupt)
