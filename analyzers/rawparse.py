"""Raw probe output as the analyzers read it (Raw: maps keyed as "pid,category,probe"...).

The engine's maps become a Raw through jvmos.engine.to_raw. What is parsed here is `bpftrace
-f json` output, one JSON object per line: the recordings made before bpftrace's probe scripts
were retired (raw/bpftrace.json, re-read by `jvmos report` and scripts/reanalyse.py), and the
output of the bpftrace tools that remain (probes/net.bt, the tests' witnesses)."""
import json
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from jvmos.catalogue import OUTPUT_MAP_ARITY

# the line a jvmos bpftrace script prints after it has printed every map at the stop signal
# (the retired common.bt, and probes/net.bt)
MAPS_PRINTED = "jvmos-maps-printed"

# how many key fields each printed map has: the catalogue's contract with the probe scripts
MAP_ARITY = OUTPUT_MAP_ARITY


@dataclass
class Raw:
    maps: Dict[str, object] = field(default_factory=dict)
    printf: List[str] = field(default_factory=list)
    attached_probes: int = 0
    lost_events: int = 0
    errors: List[str] = field(default_factory=list)
    # the script printed every map at the stop, then its end marker (MAPS_PRINTED): the maps
    # are those of the stop; any printed after the marker (bpftrace's own end) are ignored;
    # the engine's maps are whole by construction (set by engine.to_raw)
    maps_printed: bool = False
    # values that bpftrace printed as unsigned 64-bit sums above 2^63: sums of signed
    # differences that came out negative (a span whose bookkeeping went wrong), kept as the
    # negative numbers they are: [(map, key, value)]
    negative: List[Tuple[str, str, int]] = field(default_factory=list)

    def keyed(self, name: str) -> Dict[Tuple[str, ...], object]:
        """A map as {(key fields...): value}; {} when the map never got an entry."""
        val = self.maps.get(name)
        if not isinstance(val, dict):
            return {}
        n = MAP_ARITY.get(name, 1)
        out = {}
        for k, v in val.items():
            out[tuple(k.split(",", n - 1)) if n > 1 else (k,)] = v
        return out

    def sum_by_pid(self, name: str, pick) -> Dict[str, int]:
        """{pid: sum of the map's values whose key passes pick(key fields after the pid)}."""
        out: Dict[str, int] = {}
        for k, v in self.keyed(name).items():
            if pick(k[1:]):
                out[k[0]] = out.get(k[0], 0) + int(v)
        return out

    def scalar(self, name: str, default=0):
        val = self.maps.get(name, default)
        return val if not isinstance(val, dict) else default


_WRAP = 1 << 64


def _signed(raw: Raw, name: str, val, key: str = ""):
    """A map's values with bpftrace's unsigned sums of negative totals turned back into the
    negative numbers they are (two's complement), each one noted in raw.negative."""
    if isinstance(val, dict):
        return {k: _signed(raw, name, v, k) for k, v in val.items()}
    if isinstance(val, int) and not isinstance(val, bool) and val >= _WRAP >> 1:
        raw.negative.append((name, key, val - _WRAP))
        return val - _WRAP
    return val


def parse_lines(lines) -> Raw:
    raw = Raw()
    for lineno, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            raw.errors.append(f"line {lineno}: not JSON: {line[:80]}")
            continue
        if not isinstance(rec, dict):
            raw.errors.append(f"line {lineno}: not a bpftrace record: {line[:80]}")
            continue
        kind, data = rec.get("type"), rec.get("data")
        if kind in ("map", "hist", "lhist", "stats") and isinstance(data, dict):
            if not raw.maps_printed:
                if kind == "map":
                    data = {name: _signed(raw, name, v) for name, v in data.items()}
                raw.maps.update(data)
        elif kind == "printf":
            raw.printf.append(data)
            if isinstance(data, str) and data.strip() == MAPS_PRINTED:
                raw.maps_printed = True
        elif kind == "attached_probes":
            raw.attached_probes = int(data.get("probes", 0))
        elif kind == "lost_events":
            raw.lost_events += int(data.get("events", 0))
    return raw


def parse_file(path, decoys: Optional[Dict[str, str]] = None) -> Raw:
    """Like parse_lines; also an error when the output stops in the middle of a line (bpftrace
    ends every record with a newline, so a missing one means the output was cut off).
    decoys: {decoy path: library path} of a process-scoped recording (jvmos.scope): probe names
    carry the decoy, and are given back their library's path."""
    with open(path, "rb") as f:
        text = f.read().decode(errors="replace")
    for decoy, real in (decoys or {}).items():
        text = text.replace(decoy, real)
    lines = text.split("\n")
    raw = parse_lines(lines)
    if lines[-1].strip():
        raw.errors.append(f"line {len(lines)}: unterminated, the output was cut off: "
                          f"{lines[-1][:80]}")
    return raw
