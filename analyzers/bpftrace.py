"""bpftrace's output (`bpftrace -f json`, one JSON object per line) read into Records.

Off the recording path: jvmos records with its own engine (jvmos.engine.decode). What is read
here is what bpftrace printed for the recordings made before its probe scripts were retired
(raw/bpftrace.json, which scripts/reanalyse.py reads again) and for the bpftrace tools that
remain (probes/net.bt's end marker). A printed map's name loses bpftrace's '@', and its key,
which bpftrace prints comma-joined, is split into the fields it was made of."""
import json
from typing import Dict, Optional

from jvmos.analyzers.records import Records

# the line a jvmos bpftrace script prints after it has printed every map at the stop signal
# (the retired common.bt, and probes/net.bt)
MAPS_PRINTED = "jvmos-maps-printed"

# how many key fields each map the retired scripts printed has (the last may contain ':' but
# no ','); a map not listed has one
KEY_FIELDS = {"calls": 3, "bytes": 3, "time": 3, "wall": 3, "path_bytes": 3, "path_calls": 3,
              "csw": 3, "offcpu_ns": 3, "offcpu_n": 3, "ncalls": 3, "ntime": 3, "nhits": 3,
              "thr_incl": 1, "grow_vm": 2, "grow_malloc": 2, "fault_region": 2, "missed": 2,
              "nio_confirmed": 1, "exec": 1, "exit_ns": 1, "held": 1, "hits": 2, "untimed": 3,
              "in_progress": 3}

_WRAP = 1 << 64


def _signed(rec: Records, name: str, key, val):
    """bpftrace's unsigned sum of a negative total turned back into the negative number it
    is (two's complement), noted in rec.negative."""
    if isinstance(val, int) and not isinstance(val, bool) and val >= _WRAP >> 1:
        rec.negative.append((name, key, val - _WRAP))
        return val - _WRAP
    return val


def _add_map(rec: Records, name: str, data) -> None:
    name = name.lstrip("@")
    if not isinstance(data, dict):
        rec.maps[name] = _signed(rec, name, (), data)
        return
    n = KEY_FIELDS.get(name, 1)
    rec.maps[name] = {(tuple(k.split(",", n - 1)) if n > 1 else (k,)):
                      _signed(rec, name, k, v) for k, v in data.items()}


def parse_lines(lines) -> Records:
    rec = Records()
    for lineno, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            rec.errors.append(f"line {lineno}: not JSON: {line[:80]}")
            continue
        if not isinstance(obj, dict):
            rec.errors.append(f"line {lineno}: not a bpftrace record: {line[:80]}")
            continue
        kind, data = obj.get("type"), obj.get("data")
        if kind in ("map", "hist", "lhist", "stats") and isinstance(data, dict):
            if not rec.final:               # maps printed after the marker: bpftrace's own end
                for name, v in data.items():
                    if kind == "map":
                        _add_map(rec, name, v)
                    else:
                        rec.maps[name.lstrip("@")] = v
        elif kind == "printf":
            if isinstance(data, str) and data.strip() == MAPS_PRINTED:
                rec.final = True
        elif kind == "attached_probes":
            rec.attached_probes = int(data.get("probes", 0))
        elif kind == "lost_events":
            rec.lost_events += int(data.get("events", 0))
    return rec


def parse_file(path, decoys: Optional[Dict[str, str]] = None) -> Records:
    """Like parse_lines; also an error when the output stops in the middle of a line (bpftrace
    ends every record with a newline, so a missing one means the output was cut off).
    decoys: {decoy path: library path} of a process-scoped recording: probe names carry the
    decoy, and are given back their library's path."""
    with open(path, "rb") as f:
        text = f.read().decode(errors="replace")
    for decoy, real in (decoys or {}).items():
        text = text.replace(decoy, real)
    lines = text.split("\n")
    rec = parse_lines(lines)
    if lines[-1].strip():
        rec.errors.append(f"line {len(lines)}: unterminated, the output was cut off: "
                          f"{lines[-1][:80]}")
    return rec
