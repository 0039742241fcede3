"""Network consumption of one port's traffic on the loopback interface, counted in the kernel
(probes/net.bt): packets and bytes each way, payload bytes, connections (SYNs). Used by the
experiments that put two JVMs on 127.0.0.1 and report what went between them (seed 000's
Table 7), where tcpdump dropped packets at high rates; a per-packet tracepoint does not.

    with NetCounter(port, out_dir) as net:
        ... the traffic ...
    net.result  ->  {"to_port": {"packets", "bytes", "payload_bytes", "connections"},
                     "from_port": {...}, "other_proto_packets": n}

Checked against a second method: tests/integration/test_ipc.py sends known bytes through a
socket pair and expects exactly them as payload (and, by hand on 24 Nov, /proc/net/dev's lo
packets equalled the count: 37 = 37, bytes 14 per packet fewer, the link header).
"""
import json
from pathlib import Path
from typing import Dict, Optional

from jvmos import ROOT, JvmosError
from jvmos import tools
from jvmos.analyzers.bpftrace import MAPS_PRINTED
from jvmos.session import ATTACH_TIMEOUT_S, Session

SCRIPT = ROOT / "probes" / "net.bt"
DIRECTIONS = ("to_port", "from_port")


def parse(text: str) -> dict:
    """net.bt's JSON output -> the result (a direction with no packet has zeros)."""
    maps: Dict[str, object] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            continue
        if ev.get("type") == "printf" and MAPS_PRINTED in str(ev.get("data")):
            break       # the counts are those printed before the marker (as jvmos.analyzers.bpftrace reads)
        if ev.get("type") == "map":
            maps.update(ev.get("data") or {})
    out = {}
    for d in DIRECTIONS:
        get = lambda name: int((maps.get(name) or {}).get(d, 0))  # noqa: E731
        out[d] = {"packets": get("@net_packets"), "bytes": get("@net_bytes"),
                  "payload_bytes": get("@net_payload"), "connections": get("@net_syn")}
        n = out[d]["packets"]
        out[d]["mean_packet_bytes"] = out[d]["bytes"] / n if n else None
    other = maps.get("@net_other_proto")
    out["other_proto_packets"] = int(other) if isinstance(other, (int, float)) else 0
    return out


class NetCounter:
    """bpftrace running net.bt for `port` while the block runs, started, awaited and stopped
    by a jvmos Session (its own session, killed with jvmos, ready at common's marker, SIGINT
    for its maps); its raw output is kept in out_dir/net-<port>.json."""

    # as long as a recording may take to attach: on a busy host every tracepoint attach waits
    # for other processes' uprobes to be unregistered, one kernel grace period each
    def __init__(self, port: int, out_dir: Path, ready_timeout: float = ATTACH_TIMEOUT_S):
        if not 0 < int(port) < 65536:
            raise JvmosError(f"bad port {port} to count")
        self.port, self.dir, self.ready_timeout = int(port), Path(out_dir), ready_timeout
        self.session = Session()
        self.result: Optional[dict] = None
        self.raw = self.dir / f"net-{self.port}.json"
        self.err = self.dir / f"net-{self.port}.stderr"

    def __enter__(self):
        tools.ensure_tracefs()
        self.dir.mkdir(parents=True, exist_ok=True)
        self.session.start_bpftrace(SCRIPT, [self.port], self.raw, self.err)

        def abort(msg, _status, _code):
            if self.session.bt.poll() is None:
                self.session.let_die()
            raise JvmosError(f"the network counter (bpftrace net.bt): {msg}")

        self.session.wait_ready(self.raw, self.err, abort, launched=False,
                                timeout=self.ready_timeout)
        return self

    def __exit__(self, *exc):
        died = self.session.bt.poll()      # not None: bpftrace ended before it was stopped
        if died is None:
            self.session.interrupt(timeout=60)
        text = self.raw.read_text(errors="replace")
        if died is not None or MAPS_PRINTED not in text:
            # no END: no maps either, and zeros would read as "no traffic"; never a count
            why = (f"bpftrace exited by itself (status {died})" if died is not None
                   else "bpftrace did not reach its END after the stop")
            if exc and exc[0] is not None:
                return False               # the block's own error is the one to report
            raise JvmosError(f"the network counter (net.bt, port {self.port}) failed: {why}; "
                             f"see {self.err}")
        self.result = parse(text)
        return False
