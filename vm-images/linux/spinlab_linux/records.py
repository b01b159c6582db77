"""The agent's stream, read and checked on the host.

Everything in the stream was written by the guest, so it is bad input until checked. The stream
is a sequence of frames (README.md, "Stream format"):

  header, 20 bytes, little-endian:
    0  magic    b"SLWF"
    4  version  u16, FORMAT_VERSION
    6  type     u16: 1 META, 2 WAITS, 3 CPU, 4 TRAILER, 5 ERROR, 6 HOLDS
    8  seq      u32: 0, 1, 2, ... with no gap
   12  length   u32: payload bytes, at most MAX_PAYLOAD
   16  crc32    u32: zlib's CRC-32 of header bytes 0-15 followed by the payload
  payload:
    META, CPU, TRAILER: one JSON object (UTF-8)
    WAITS: length / 32 records of <u32 cpu, u16 depth, u16 flags, u64 lock, u64 start, u64 end>
    ERROR: the guest's sentence (UTF-8)
    HOLDS (workload gt only): <u64 lock, u32 index, u32 count>, then count records of
      <u32 cpu, u32 flags, u64 acquire, u64 release>: the ground-truth module's own record of
      every acquisition of its lock (index: the holds sent before this frame)

Order: META first, then WAITS and CPU frames (and HOLDS frames), then TRAILER last; nothing
follows the trailer. A gt stream's trailer has a "gt" object whose counts the holds must match.

parse() checks every frame and every record and raises StreamError on the first thing wrong,
naming it; the error's .partial holds what was read (and checked) before it.
"""
import json
import struct
import zlib
from dataclasses import dataclass, field

MAGIC = b"SLWF"
FORMAT_VERSION = 1
META, WAITS, CPU, TRAILER, ERROR, HOLDS = 1, 2, 3, 4, 5, 6
TYPE_NAMES = {META: "META", WAITS: "WAITS", CPU: "CPU", TRAILER: "TRAILER", ERROR: "ERROR",
              HOLDS: "HOLDS"}
HEADER = struct.Struct("<4sHHIII")
HEADER_SIZE = HEADER.size            # 20
WAIT = struct.Struct("<IHHQQQ")
WAIT_SIZE = WAIT.size                # 32
MAX_WAITS_PER_FRAME = 1024           # the agent's batch
HOLDS_HEAD = struct.Struct("<QII")   # lock, index, count
HOLD = struct.Struct("<IIQQ")        # cpu, flags, acquire, release
HOLD_SIZE = HOLD.size                # 24
MAX_HOLDS_PER_FRAME = 1024
HOLD_HOLDER = 1                      # flags: the holder thread's hold (on holder_cpu)
MAX_PAYLOAD = 1 << 20
ACK = b"A"                           # the host's answer to a checked trailer
GO = b"G"                            # the host's go (spinlab.go=1): its recorders are running
HIST_BUCKETS = 64
LONG_WAIT_THRESHOLD = 1 << 20

META_KEYS = {"agent": str, "format": int, "kernel_release": str, "kernel_version": str,
             "ncpus": int, "hypervisor_flag": (bool, type(None)), "pv_spinlocks_line": str,
             "workload": str, "seconds": (int, float), "trace": bool, "buffer_kb": int,
             "trace_clock": str, "symbol": str, "symbol_reason": str, "symbol_ftrace": bool,
             "uptime_at_start_s": (int, float), "cmdline": str}
CPU_KEYS = ("cpu", "begins", "ends", "waits", "unpaired_begin", "unpaired_end", "nested",
            "max_depth", "too_deep", "cut", "in_gaps", "lost_markers", "unparsed", "first_ts",
            "last_ts", "entries", "overrun", "commit_overrun", "dropped", "bytes")
TRAILER_KEYS = {"frames": int, "waits": int, "cpus": int, "window": dict, "workload": dict,
                "probes": dict, "read_ns": int, "agent_ns": int}
PROBE_SYMBOLS = ("native_queued_spin_lock_slowpath", "__pv_queued_spin_lock_slowpath")


class StreamError(ValueError):
    """A bad frame or record. .partial: the GuestRun read before it; .offset: its byte offset."""

    def __init__(self, message, partial, offset):
        super().__init__(f"{message} (at byte {offset}, frame {partial.frames})")
        self.partial = partial
        self.offset = offset


@dataclass
class Wait:
    cpu: int
    depth: int
    lock: int
    start: int
    end: int

    @property
    def cycles(self):
        return self.end - self.start


@dataclass
class Hold:
    """One acquisition of the ground-truth module's lock, as the module recorded it (guest
    TSC): held by cpu from acquire to release; holder: by the holder thread on holder_cpu."""
    cpu: int
    flags: int
    acquire: int
    release: int

    @property
    def holder(self):
        return bool(self.flags & HOLD_HOLDER)


@dataclass
class GuestRun:
    meta: dict = None
    waits: list = field(default_factory=list)
    holds: list = field(default_factory=list)     # gt: Hold records, in lock order
    gt_lock: int = None                           # gt: the lock's address (HOLDS frames)
    cpus: dict = field(default_factory=dict)      # cpu -> the CPU frame's counts
    trailer: dict = None
    guest_error: str = None                       # an ERROR frame's sentence
    frames: int = 0                               # frames read and checked

    @property
    def complete(self):
        return self.trailer is not None


def _json(payload, what):
    try:
        obj = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ValueError(f"{what} frame is not JSON: {e}")
    if not isinstance(obj, dict):
        raise ValueError(f"{what} frame is not a JSON object")
    return obj


def _nonneg_int(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def check_meta(m):
    for k, t in META_KEYS.items():
        if k not in m:
            raise ValueError(f"META has no '{k}'")
        if not isinstance(m[k], t) or (t is int and isinstance(m[k], bool)):
            raise ValueError(f"META '{k}' is {m[k]!r}, not of type {t}")
    if m["format"] != FORMAT_VERSION:
        raise ValueError(f"META format {m['format']}, not {FORMAT_VERSION}")
    if not 1 <= m["ncpus"] <= 4096:
        raise ValueError(f"META ncpus {m['ncpus']} is not 1 to 4096")
    if m["trace"] and m["workload"] != "probecost" and m["symbol"] not in PROBE_SYMBOLS:
        raise ValueError(f"META symbol '{m['symbol']}' is not one of {', '.join(PROBE_SYMBOLS)}")


def check_cpu(c, ncpus, seen):
    for k in CPU_KEYS:
        if not _nonneg_int(c.get(k)):
            raise ValueError(f"CPU frame '{k}' is {c.get(k)!r}, not a count")
    cpu = c["cpu"]
    if cpu >= ncpus:
        raise ValueError(f"CPU frame for cpu {cpu}, but the guest has {ncpus} CPUs")
    if cpu in seen:
        raise ValueError(f"a second CPU frame for cpu {cpu}")
    if c["begins"] != c["waits"] + c["unpaired_begin"]:
        raise ValueError(f"cpu {cpu}: {c['begins']} begins but {c['waits']} waits and "
                         f"{c['unpaired_begin']} unpaired begins")
    if c["ends"] != c["waits"] + c["unpaired_end"]:
        raise ValueError(f"cpu {cpu}: {c['ends']} ends but {c['waits']} waits and "
                         f"{c['unpaired_end']} unpaired ends")
    # Events read live (spinlab.region=1) left the ring buffer through its trace_pipe: the
    # buffer counts them as read, no longer as entries. Streams of agents before it lack the key.
    read = c.get("read_events", 0)
    if not isinstance(read, int) or read < 0:
        raise ValueError(f"cpu {cpu}: read_events {read!r} is not a count")
    if c["entries"] + read != c["begins"] + c["ends"] + c["unparsed"]:
        raise ValueError(f"cpu {cpu}: the ring buffer held {c['entries']} events and gave "
                         f"{read} to a reader, the agent read {c['begins']} begins, "
                         f"{c['ends']} ends and {c['unparsed']} other lines")


def check_trailer(t):
    for k, typ in TRAILER_KEYS.items():
        if k not in t:
            raise ValueError(f"TRAILER has no '{k}'")
        if not isinstance(t[k], typ) or (typ is int and (isinstance(t[k], bool) or t[k] < 0)):
            raise ValueError(f"TRAILER '{k}' is {t[k]!r}")
    for k in ("tsc_start", "tsc_end", "ns"):
        if not _nonneg_int(t["window"].get(k)):
            raise ValueError(f"TRAILER window '{k}' is {t['window'].get(k)!r}")
    if t["window"]["tsc_end"] < t["window"]["tsc_start"]:
        raise ValueError("TRAILER window ends before it starts")
    for k in ("ops", "failed", "busy_ns"):
        if not _nonneg_int(t["workload"].get(k)):
            raise ValueError(f"TRAILER workload '{k}' is {t['workload'].get(k)!r}")
    for k in ("begin_hits", "begin_misses", "end_hits", "end_misses", "begin_hits_at_stop",
              "end_hits_at_stop", "begin_hits_disarming", "end_hits_disarming"):
        if not _nonneg_int(t["probes"].get(k)):
            raise ValueError(f"TRAILER probes '{k}' is {t['probes'].get(k)!r}")
    if "ab" in t:
        if not isinstance(t["ab"], list) or not t["ab"] or len(t["ab"]) % 2:
            raise ValueError(f"TRAILER ab is not an even, non-empty list of phases")
        for i, ph in enumerate(t["ab"]):
            if not isinstance(ph, dict) or ph.get("traced") is not bool(i % 2) or \
                    not _nonneg_int(ph.get("ops")) or not _nonneg_int(ph.get("ns")):
                raise ValueError(f"TRAILER ab phase {i} is {ph!r} (untraced phases first, "
                                 f"then turn about)")


def check_holds_frame(run, seq, payload):
    """One HOLDS frame against what came before it; the frame's Hold records."""
    where = f"HOLDS frame {seq}"
    if run.meta["workload"] != "gt":
        raise ValueError(f"{where} in a stream of workload '{run.meta['workload']}', not gt")
    if len(payload) < HOLDS_HEAD.size or (len(payload) - HOLDS_HEAD.size) % HOLD_SIZE:
        raise ValueError(f"{where} of {len(payload)} bytes, not a {HOLDS_HEAD.size}-byte head "
                         f"and {HOLD_SIZE}-byte records")
    lock, index, count = HOLDS_HEAD.unpack_from(payload)
    if count != (len(payload) - HOLDS_HEAD.size) // HOLD_SIZE:
        raise ValueError(f"{where} says {count} holds, it carries "
                         f"{(len(payload) - HOLDS_HEAD.size) // HOLD_SIZE}")
    if count > MAX_HOLDS_PER_FRAME:
        raise ValueError(f"{where} of {count} holds, more than {MAX_HOLDS_PER_FRAME}")
    if index != len(run.holds):
        raise ValueError(f"{where} begins at hold {index}, {len(run.holds)} came before it")
    if run.gt_lock is not None and lock != run.gt_lock:
        raise ValueError(f"{where} names lock {lock:#x}, earlier ones {run.gt_lock:#x}")
    ncpus = run.meta["ncpus"]
    prev = run.holds[-1] if run.holds else None
    out = []
    for i, (cpu, flags, acquire, release) in enumerate(
            HOLD.iter_unpack(payload[HOLDS_HEAD.size:])):
        at = f"{where} hold {index + i}"
        if cpu >= ncpus:
            raise ValueError(f"{at}: cpu {cpu}, but the guest has {ncpus} CPUs")
        if flags & ~HOLD_HOLDER:
            raise ValueError(f"{at}: unknown flags {flags:#x}")
        if release < acquire:
            raise ValueError(f"{at}: released at {release}, before its acquire {acquire}")
        if prev is not None and acquire < prev.release:
            raise ValueError(f"{at}: acquired at {acquire}, before the hold before it was "
                             f"released ({prev.release}): a lock held twice at once")
        prev = Hold(cpu, flags, acquire, release)
        out.append(prev)
    return lock, out


def check_gt_trailer(run, t):
    """A gt stream's trailer: its "gt" object against the HOLDS frames."""
    g = t.get("gt")
    if not isinstance(g, dict):
        raise ValueError("a gt stream's TRAILER has no 'gt' object")
    if run.gt_lock is None:
        raise ValueError("a gt stream without a HOLDS frame")
    for k in ("holder_cpu", "hold_us", "gap_us", "holds", "dropped"):
        if not _nonneg_int(g.get(k)):
            raise ValueError(f"TRAILER gt '{k}' is {g.get(k)!r}")
    if g.get("lock") != f"{run.gt_lock:#x}":
        raise ValueError(f"TRAILER gt lock {g.get('lock')!r}, the HOLDS frames say "
                         f"{run.gt_lock:#x}")
    if g["holds"] != len(run.holds):
        raise ValueError(f"TRAILER gt counts {g['holds']} holds, the HOLDS frames had "
                         f"{len(run.holds)}")
    ncpus = run.meta["ncpus"]
    if g["holder_cpu"] >= ncpus:
        raise ValueError(f"TRAILER gt holder_cpu {g['holder_cpu']}, but the guest has {ncpus} CPUs")
    acq = g.get("acquisitions")
    if not isinstance(acq, list) or len(acq) != ncpus or not all(_nonneg_int(a) for a in acq):
        raise ValueError(f"TRAILER gt acquisitions {acq!r} is not a count per CPU")
    if sum(acq) != g["holds"] + g["dropped"]:
        raise ValueError(f"TRAILER gt: {sum(acq)} acquisitions, but {g['holds']} holds and "
                         f"{g['dropped']} dropped")
    per_cpu = [0] * ncpus
    for i, h in enumerate(run.holds):
        per_cpu[h.cpu] += 1
        if h.holder != (h.cpu == g["holder_cpu"]):
            raise ValueError(f"hold {i}: cpu {h.cpu} with holder flag {h.holder}, but the "
                             f"holder CPU is {g['holder_cpu']}")
    if g["dropped"] == 0 and per_cpu != acq:
        raise ValueError(f"TRAILER gt acquisitions {acq} per CPU, the holds {per_cpu}")


def frames(data):
    """(offset, type, seq, payload) for each complete frame whose header and CRC are right;
    stops quietly at a truncated end. Raises ValueError (with the offset) on a bad header or
    checksum."""
    off = 0
    while off + HEADER_SIZE <= len(data):
        magic, version, ftype, seq, length, crc = HEADER.unpack_from(data, off)
        if magic != MAGIC:
            raise _At(off, f"bad magic {magic!r}, not {MAGIC!r}")
        if version != FORMAT_VERSION:
            raise _At(off, f"format version {version}, not {FORMAT_VERSION}")
        if ftype not in TYPE_NAMES:
            raise _At(off, f"unknown frame type {ftype}")
        if length > MAX_PAYLOAD:
            raise _At(off, f"{TYPE_NAMES[ftype]} frame of {length} bytes, more than {MAX_PAYLOAD}")
        if off + HEADER_SIZE + length > len(data):
            return
        payload = bytes(data[off + HEADER_SIZE: off + HEADER_SIZE + length])
        want = zlib.crc32(payload, zlib.crc32(bytes(data[off:off + 16])))
        if want != crc:
            raise _At(off, f"{TYPE_NAMES[ftype]} frame {seq}: checksum {crc:#010x}, "
                           f"computed {want:#010x}")
        yield off, ftype, seq, payload
        off += HEADER_SIZE + length


class _At(ValueError):
    def __init__(self, offset, message):
        super().__init__(message)
        self.offset = offset


def parse(data):
    """Read and check a whole stream; a GuestRun. StreamError on the first thing wrong, or when
    the stream ends without its trailer."""
    run = GuestRun()
    per_cpu_waits = {}
    end = 0
    try:
        for off, ftype, seq, payload in frames(data):
            end = off
            if seq != run.frames:
                raise ValueError(f"frame sequence number {seq}, expected {run.frames}")
            name = TYPE_NAMES[ftype]
            if run.trailer is not None:
                raise ValueError(f"a {name} frame after the trailer")
            if ftype == ERROR:
                run.guest_error = payload.decode("utf-8", errors="replace")
                raise ValueError(f"the guest reported an error: {run.guest_error}")
            if run.meta is None and ftype != META:
                raise ValueError(f"the stream begins with a {name} frame, not META")
            if ftype == META:
                if run.meta is not None:
                    raise ValueError("a second META frame")
                m = _json(payload, name)
                check_meta(m)
                run.meta = m
            elif ftype == WAITS:
                if not payload or len(payload) % WAIT_SIZE:
                    raise ValueError(f"WAITS frame of {len(payload)} bytes, not a positive "
                                     f"multiple of {WAIT_SIZE}")
                if len(payload) // WAIT_SIZE > MAX_WAITS_PER_FRAME:
                    raise ValueError(f"WAITS frame of {len(payload) // WAIT_SIZE} records, "
                                     f"more than {MAX_WAITS_PER_FRAME}")
                ncpus = run.meta["ncpus"]
                batch = []
                for i, (cpu, depth, flags, lock, start, stop) in enumerate(WAIT.iter_unpack(payload)):
                    where = f"WAITS frame {seq} record {i}"
                    if cpu >= ncpus:
                        raise ValueError(f"{where}: cpu {cpu}, but the guest has {ncpus} CPUs")
                    if cpu in run.cpus:
                        raise ValueError(f"{where}: a wait on cpu {cpu} after its CPU frame")
                    if stop < start:
                        raise ValueError(f"{where}: ends at {stop}, before its start {start}")
                    if flags:
                        raise ValueError(f"{where}: reserved flags {flags:#x} set")
                    if depth >= 32:
                        raise ValueError(f"{where}: nesting depth {depth}, the agent keeps 32")
                    batch.append(Wait(cpu, depth, lock, start, stop))
                run.waits.extend(batch)
                for w in batch:
                    per_cpu_waits[w.cpu] = per_cpu_waits.get(w.cpu, 0) + 1
            elif ftype == HOLDS:
                lock, batch = check_holds_frame(run, seq, payload)
                run.gt_lock = lock
                run.holds.extend(batch)
            elif ftype == CPU:
                c = _json(payload, name)
                check_cpu(c, run.meta["ncpus"], run.cpus)
                got = per_cpu_waits.get(c["cpu"], 0)
                if got != c["waits"]:
                    raise ValueError(f"cpu {c['cpu']}: its CPU frame counts {c['waits']} waits, "
                                     f"the stream had {got}")
                run.cpus[c["cpu"]] = c
            elif ftype == TRAILER:
                t = _json(payload, name)
                check_trailer(t)
                if t["frames"] != run.frames:
                    raise ValueError(f"the trailer counts {t['frames']} frames before it, "
                                     f"the stream had {run.frames}")
                if t["waits"] != len(run.waits):
                    raise ValueError(f"the trailer counts {t['waits']} waits, the stream had "
                                     f"{len(run.waits)}")
                if t["cpus"] != len(run.cpus):
                    raise ValueError(f"the trailer counts {t['cpus']} CPU frames, the stream "
                                     f"had {len(run.cpus)}")
                if t["cpus"] and t["cpus"] != run.meta["ncpus"]:
                    raise ValueError(f"{t['cpus']} CPU frames for {run.meta['ncpus']} CPUs")
                if run.meta["workload"] == "gt":
                    check_gt_trailer(run, t)
                run.trailer = t
            run.frames += 1
            end = off + HEADER_SIZE + len(payload)
    except _At as e:
        raise StreamError(str(e), run, e.offset) from None
    except ValueError as e:
        raise StreamError(str(e), run, end) from None
    if run.trailer is None:
        raise StreamError(f"the stream ends after {len(data)} bytes without its trailer"
                          + (" (it is cut inside a frame)" if end != len(data) else ""),
                          run, end)
    if end != len(data):
        raise StreamError(f"{len(data) - end} bytes after the trailer", run, end)
    return run


def trailer_seen(data):
    """True when data holds a complete, checksummed TRAILER frame (what the host acknowledges).
    Looks only at frame headers and checksums; parse() checks the rest."""
    try:
        return any(ftype == TRAILER for _, ftype, _, _ in frames(data))
    except ValueError:
        return False


# ---- summaries ----

def log2_bucket(cycles):
    """The index of the most significant set bit; 0 and 1 both go in bucket 0 (as
    kernel-patch/lockstat/log2_bucket.h)."""
    return max(cycles.bit_length() - 1, 0)


def histograms(waits, ncpus):
    """{cpu: [count in bucket k for k in 0..63]} for every CPU."""
    h = {cpu: [0] * HIST_BUCKETS for cpu in range(ncpus)}
    for w in waits:
        h[w.cpu][log2_bucket(w.cycles)] += 1
    return h


def ab_summary(phases):
    """Throughput traced against untraced from an A/B run's phases: pooled rates, their
    ratio, and each adjacent (untraced, traced) pair's ratio. None without phases."""
    if not phases:
        return None
    tr = [p for p in phases if p["traced"]]
    un = [p for p in phases if not p["traced"]]

    def rate(ps):
        ns = sum(p["ns"] for p in ps)
        return sum(p["ops"] for p in ps) / (ns / 1e9) if ns else None

    pairs = []
    for u, t in zip(phases[0::2], phases[1::2]):
        if u["ops"] and u["ns"] and t["ns"]:
            pairs.append((t["ops"] / t["ns"]) / (u["ops"] / u["ns"]))
    r_tr, r_un = rate(tr), rate(un)
    return {"phases": len(phases), "traced_ops_per_s": r_tr, "untraced_ops_per_s": r_un,
            "ratio": r_tr / r_un if r_tr is not None and r_un else None,
            "pair_ratios": pairs, "traced_s": sum(p["ns"] for p in tr) / 1e9,
            "untraced_s": sum(p["ns"] for p in un) / 1e9}


def summary(run):
    """The numbers a run is judged by: waits per second of traced time, the share of waits of
    2^20 cycles or more, losses, per-CPU counts and histograms, and an A/B run's throughput
    traced against untraced."""
    ncpus = run.meta["ncpus"]
    window = run.trailer["window"]
    seconds = window["ns"] / 1e9
    long_waits = sum(1 for w in run.waits if w.cycles >= LONG_WAIT_THRESHOLD)
    lost = {c: run.cpus[c]["overrun"] + run.cpus[c]["dropped"] + run.cpus[c]["lost_markers"]
            for c in run.cpus}
    probes = run.trailer["probes"]
    wl = run.trailer["workload"]
    # Every hit counted before the agent began to stop the probes is in a buffer or counted
    # as dropped; more than that missing was lost without a count.
    recorded = sum(c["begins"] + c["ends"] + c["dropped"] + c["overrun"]
                   for c in run.cpus.values())
    at_stop = (probes["begin_hits_at_stop"] + probes["end_hits_at_stop"]
               - probes["begin_hits_disarming"] - probes["end_hits_disarming"])
    uncounted = max(0, at_stop - recorded)
    ab = ab_summary(run.trailer.get("ab"))
    traced = ab["traced_s"] if ab else seconds   # A/B: waits happen in the traced phases only
    tsc_hz = (window["tsc_end"] - window["tsc_start"]) / seconds if seconds > 0 else None
    return {
        "waits": len(run.waits),
        "window_s": seconds,
        "traced_s": traced,
        "tsc_hz_estimate": tsc_hz,
        "waits_per_s": len(run.waits) / traced if traced > 0 else None,
        "long_waits": long_waits,
        "long_wait_threshold": LONG_WAIT_THRESHOLD,
        "long_share": long_waits / len(run.waits) if run.waits else 0.0,
        "nested_waits": sum(1 for w in run.waits if w.depth),
        "max_cycles": max((w.cycles for w in run.waits), default=0),
        "unpaired_begin": sum(c["unpaired_begin"] for c in run.cpus.values()),
        "unpaired_end": sum(c["unpaired_end"] for c in run.cpus.values()),
        "lost_events": sum(lost.values()),
        "lost_events_per_cpu": {str(c): n for c, n in sorted(lost.items())},
        "probe_misses": probes["begin_misses"] + probes["end_misses"],
        "uncounted_losses": uncounted,
        "ab": ab,
        "probe_hits": {"begin": probes["begin_hits"], "end": probes["end_hits"]},
        "workload": dict(wl, ops_per_s=(wl["ops"] / (wl["busy_ns"] / 1e9)
                                        if wl["busy_ns"] else None)),
        "per_cpu": {str(c): run.cpus[c] for c in sorted(run.cpus)},
        "histograms": {str(c): h for c, h in histograms(run.waits, ncpus).items()},
        "gt": gt_summary(run),
    }


def gt_summary(run):
    """A gt run: the module's holds and the waits on its lock (None for other runs)."""
    if run.gt_lock is None:
        return None
    g = run.trailer.get("gt", {}) if run.trailer else {}
    on = [w for w in run.waits if w.lock == run.gt_lock]
    held = [h.release - h.acquire for h in run.holds if h.holder]
    return {"lock": f"{run.gt_lock:#x}", "holds": len(run.holds), "dropped": g.get("dropped"),
            "holder_cpu": g.get("holder_cpu"), "holder_holds": len(held),
            "holder_hold_cycles_median": sorted(held)[len(held) // 2] if held else None,
            "waits_on_lock": len(on),
            "long_waits_on_lock": sum(1 for w in on if w.cycles >= LONG_WAIT_THRESHOLD),
            "long_waits_on_lock_per_cpu": {
                str(c): sum(1 for w in on if w.cpu == c and w.cycles >= LONG_WAIT_THRESHOLD)
                for c in range(run.meta["ncpus"])}}
