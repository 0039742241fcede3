"""What the probes counted, as the analyzers read it: named sums keyed by tuples.

The engine's maps event becomes Records through jvmos.engine.decode, which names each sum
after what it counts (calls, bytes, time, path_bytes, csw, ...) and keys it by the fields of
its C record: (pid, category, probe), (pid, thread id, kind), ... Every key field is a string
(the pid as its decimal text, as /proc names it). A recording made before the engine (a
bpftrace script's output, raw/bpftrace.json) is read into the same Records by
jvmos.analyzers.bpftrace, which only scripts/reanalyse.py and the tests use."""
from dataclasses import dataclass, field
from typing import Dict, List, Tuple

Key = Tuple[str, ...]


@dataclass
class Records:
    # name -> {key: value}, or name -> a single value (start_ns, stop_ns)
    maps: Dict[str, object] = field(default_factory=dict)
    errors: List[str] = field(default_factory=list)
    # the sums were read after the stop, whole (the engine's final maps; a bpftrace script's
    # maps printed before its end marker)
    final: bool = False
    # sums of signed values that came out negative (two's complement: a span whose
    # bookkeeping went wrong), kept as the negative numbers they are: [(name, key, value)]
    negative: List[Tuple[str, Key, int]] = field(default_factory=list)
    # events lost, by reason (a full map, a lost fork/exec event, a program run the kernel
    # skipped), and their total
    engine_lost: Dict[str, int] = field(default_factory=dict)
    lost_events: int = 0
    # attach points open during the recording, and each program's runs and run time (when
    # the plan asked the kernel for its statistics)
    attached_probes: int = 0
    prog_stats: Dict[str, list] = field(default_factory=dict)

    def put(self, name: str, key: Key, value: int) -> None:
        """Adds value to the sum (name, key)."""
        d = self.maps.setdefault(name, {})
        d[key] = d.get(key, 0) + value

    def keyed(self, name: str) -> Dict[Key, object]:
        """A sum as {(key fields...): value}; {} when it never got an entry."""
        val = self.maps.get(name)
        return val if isinstance(val, dict) else {}

    def sum_by_pid(self, name: str, pick) -> Dict[str, int]:
        """{pid: sum of the values whose key passes pick(key fields after the pid)}."""
        out: Dict[str, int] = {}
        for k, v in self.keyed(name).items():
            if pick(k[1:]):
                out[k[0]] = out.get(k[0], 0) + int(v)
        return out

    def scalar(self, name: str, default=0):
        val = self.maps.get(name, default)
        return val if not isinstance(val, dict) else default
