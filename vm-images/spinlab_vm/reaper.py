"""The watchdog `spinlab-vm run` leaves behind: it acts only if run dies without cleaning up.

Started by supervise.spawn_reaper() in its own session (a terminal's Ctrl-C and a kill of run's
process group do not reach it) with the read end of a pipe; run holds the only write end. When
run ends, however it ends (SIGKILL included), the kernel closes that end and read() returns
end-of-file. If the VM directory still belongs to run's instance, the reaper stops what is left
(QEMU itself already died of its parent-death signal; a libvirt domain did not) and removes the
directory and /dev/shm/spinlab-NAME. After a normal exit of run there is nothing left to do.

Usage (internal): reaper.main([fd, run_dir, name, instance])
"""
import os
import signal
import sys

from . import state, supervise


def main(argv):
    fd, base, name, instance = int(argv[0]), argv[1], argv[2], argv[3]
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    while True:
        try:
            if not os.read(fd, 4096):
                break
        except InterruptedError:
            continue
    os.close(fd)
    os.environ["SPINLAB_RUN_DIR"] = base
    paths = state.Paths(name, base)
    info = state.read_json(paths.vm_json)
    if info and info.get("instance") == instance:
        supervise.teardown(paths, info)


if __name__ == "__main__":  # supervise.spawn_reaper: python3 -m spinlab_vm.reaper FD BASE NAME INSTANCE
    main(sys.argv[1:])
