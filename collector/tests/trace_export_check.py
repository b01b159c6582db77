"""Helpers of the `trace export` tests: traces from scripts (build/host/bin/trace_script, the real
writer and drain), the native trace as `trace dump` prints it, a CTF trace as babeltrace2's Python
bindings (python3-bt2) read it, and the Chrome trace-event JSON checked against the documented
format (the Trace Event Format document: phases, required fields, microsecond timestamps)."""
import os
import re
import subprocess

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.path.join(ROOT, "build", "host", "bin")
COLLECT = os.path.join(BIN, "spinlab-collect")
TRACE_SCRIPT = os.path.join(BIN, "trace_script")


def make_trace(script: str, out: str) -> str:
    subprocess.run([TRACE_SCRIPT, script, out], check=True)
    return out


def export(trace: str, fmt: str, out: str, *extra) -> subprocess.CompletedProcess:
    return subprocess.run([COLLECT, "trace", "export", trace, "--format", fmt, "-o", out, *extra],
                          capture_output=True, text=True, timeout=300)


def script_events(path: str) -> list:
    """The events a trace script writes, in order: {tsc, cpu, tid, pid, name, fields}."""
    out = []
    for line in open(path):
        line = line.split("#", 1)[0].split()
        if not line or line[0] in ("config", "drain", "flush"):
            continue
        repeat, step = 1, 0
        if line[0] == "repeat":
            repeat, step, line = int(line[1]), int(line[2]), line[3:]
        tsc, cpu, tid, pid, name = int(line[0], 0), int(line[1]), int(line[2]), int(line[3]), line[4]
        fields = dict(kv.split("=", 1) for kv in line[5:])
        for r in range(repeat):
            out.append({"tsc": tsc + r * step, "cpu": cpu, "tid": tid, "pid": pid, "name": name,
                        "fields": fields})
    return out


_DUMP = re.compile(r"^(\d+) cpu=(\d+) thread_id=(\d+) process_id=(\d+) (\S+)")


def dump(trace: str) -> tuple:
    """(events [(tsc, cpu, tid, pid, name)], counters {cpu: {name: int}}) from `trace dump`."""
    r = subprocess.run([COLLECT, "trace", "dump", trace], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    events, counters = [], {}
    for line in r.stdout.splitlines():
        m = _DUMP.match(line)
        if m:
            events.append((int(m[1]), int(m[2]), int(m[3]), int(m[4]), m[5]))
        elif line.startswith("# cpu "):
            cpu, rest = line[6:].split(" ", 1)
            counters[int(cpu)] = {k: int(v) for k, v in (kv.split("=") for kv in rest.split())}
    return events, counters


def ctf_packets(path: str) -> dict:
    """cpu -> [{seq, begin, end, discarded, bytes}] walked from the stream files (the packet
    header and context as the metadata declares them: packed little endian)."""
    import struct
    head = struct.Struct("<IIQQQQQQI")
    out = {}
    for name in sorted(os.listdir(path)):
        if not name.startswith("stream_"):
            continue
        data = open(os.path.join(path, name), "rb").read()
        at, rows = 0, []
        while at < len(data):
            magic, _, begin, end, content, size, seq, discarded, cpu = head.unpack_from(data, at)
            assert magic == 0xC1FC1FC1 and content == size and size % 8 == 0, (name, at)
            rows.append({"seq": seq, "begin": begin, "end": end, "discarded": discarded, "bytes": size // 8,
                         "cpu": cpu})
            at += size // 8
        out[int(name.split("_")[1])] = rows
    return out


def _value(f):
    import bt2
    if isinstance(f, bt2._StringFieldConst):
        return str(f)
    if isinstance(f, bt2._ArrayFieldConst):
        return [int(x) for x in f]
    return int(f)


def read_ctf(path: str, fields_of=None) -> dict:
    """Every message of a CTF trace through python3-bt2: events {name, cpu, tsc, ns, tid, pid,
    fields, packet (its address: which packet)}, discarded events [(cpu, count)], discarded packets [(cpu, count)].
    fields_of: read the payload only of events with these names (the rest get {}): python3-bt2
    spends most of its time building field objects."""
    import bt2
    events, lost, lost_packets = [], [], []
    for m in bt2.TraceCollectionMessageIterator(path):
        if type(m) is bt2._EventMessageConst:
            e = m.event
            ctx = e.common_context_field
            events.append({"name": e.name, "cpu": int(e.packet.context_field["cpu_id"]),
                           "packet": e.packet.addr,
                           "tsc": m.default_clock_snapshot.value,
                           "ns": m.default_clock_snapshot.ns_from_origin,
                           "tid": int(ctx["thread_id"]), "pid": int(ctx["process_id"]),
                           "fields": ({k: _value(v) for k, v in e.payload_field.items()}
                                      if fields_of is None or e.name in fields_of else {})})
        elif type(m) is bt2._DiscardedEventsMessageConst:
            lost.append((_stream_cpu(m), m.count))
        elif type(m) is bt2._DiscardedPacketsMessageConst:
            lost_packets.append((_stream_cpu(m), m.count))
    return {"events": events, "discarded_events": lost, "discarded_packets": lost_packets}


def _stream_cpu(m) -> int:
    # The stream's name is its file's (stream_<cpu>).
    return int(str(m.stream.name).rsplit("_", 1)[1])


# --- Chrome trace-event JSON ---------------------------------------------------------------------

PHASES = set("BEXiIC" "bne" "sft" "PNOD" "M" "Rc(),")  # the documented phases


def check_trace_events(doc) -> list:
    """Problems of a trace-event JSON object against the format document (empty: none)."""
    bad = []
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return ["not the JSON Object Format: no traceEvents array"]
    if doc.get("displayTimeUnit", "ms") not in ("ms", "ns"):
        bad.append("displayTimeUnit is neither ms nor ns")
    open_b = {}
    flows = {}
    for i, e in enumerate(doc["traceEvents"]):
        ph = e.get("ph")
        if ph not in PHASES:
            bad.append(f"event {i}: unknown phase {ph!r}")
            continue
        for k in ("name", "pid", "tid"):
            if k not in e:
                bad.append(f"event {i} ({ph}): no {k}")
        if ph != "M" and not isinstance(e.get("ts"), (int, float)):
            bad.append(f"event {i} ({ph}): ts is not a number of microseconds")
        if ph == "X" and not (isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0):
            bad.append(f"event {i}: X without a duration >= 0")
        if ph == "B":
            open_b.setdefault((e["pid"], e["tid"]), []).append(e)
        if ph == "E":
            stack = open_b.get((e["pid"], e["tid"]))
            if not stack or stack[-1]["ts"] > e["ts"]:
                bad.append(f"event {i}: E without a matching earlier B")
            else:
                stack.pop()
        if ph in "sft":
            if "id" not in e:
                bad.append(f"event {i}: flow event without an id")
            flows.setdefault(e.get("id"), []).append(e)
        if ph == "C" and not (isinstance(e.get("args"), dict) and e["args"]
                              and all(isinstance(v, (int, float)) for v in e["args"].values())):
            bad.append(f"event {i}: counter without numeric args")
        if ph == "M" and e.get("name") not in ("process_name", "process_labels", "process_sort_index",
                                              "thread_name", "thread_sort_index"):
            bad.append(f"event {i}: unknown metadata {e.get('name')!r}")
    # Complete events on one track must nest (Perfetto drops or misdraws partial overlaps).
    tracks = {}
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and isinstance(e.get("dur"), (int, float)):
            tracks.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"], e.get("name")))
    for k, slices in tracks.items():
        stack = []
        for a, b, name in sorted(slices, key=lambda x: (x[0], -x[1])):
            while stack and stack[-1] <= a + 1e-6:
                stack.pop()
            if stack and b > stack[-1] + 1e-6:
                bad.append(f"track {k}: {name!r} at {a} overlaps an enclosing slice partially")
            stack.append(b)
    for k, stack in open_b.items():
        if stack:
            bad.append(f"{len(stack)} B events on {k} never end")
    for fid, evs in flows.items():
        phs = [e["ph"] for e in evs]
        if phs.count("s") != 1 or phs.count("f") != 1:
            bad.append(f"flow {fid}: phases {phs} (want one s and one f)")
        elif next(e for e in evs if e["ph"] == "s")["ts"] > next(e for e in evs if e["ph"] == "f")["ts"]:
            bad.append(f"flow {fid}: ends before it starts")
    return bad
