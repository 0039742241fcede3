"""Network consumption of one port's traffic on the loopback interface, counted in the kernel
(probes/net.bt): packets and bytes each way, payload bytes, connections (SYNs). Used by the
experiments that put two JVMs on 127.0.0.1 and report what went between them (seed 000's
Table 7), where tcpdump dropped packets at high rates; a per-packet tracepoint does not.

    with NetCounter(port, out_dir) as net:
        ... the traffic ...
    net.result  ->  {"to_port": {"packets", "bytes", "payload_bytes", "connections"},
                     "from_port": {...}, "other_proto_packets": n}

`loopback_counters()` reads /proc/net/dev's lo line: the second method the counts are checked
against once (it counts every lo packet of the host, so only on an otherwise quiet lo).
"""
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Dict, Optional

from jvmos import ROOT, JvmosError
from jvmos import tools

SCRIPT = ROOT / "probes" / "net.bt"
READY = "jvmos-net-ready"
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
    """bpftrace running net.bt for `port` while the block runs; its raw output is kept in
    out_dir/net-<port>.json."""

    def __init__(self, port: int, out_dir: Path, ready_timeout: float = 120):
        if not 0 < int(port) < 65536:
            raise JvmosError(f"bad port {port} to count")
        self.port, self.dir, self.ready_timeout = int(port), Path(out_dir), ready_timeout
        self.bt: Optional[subprocess.Popen] = None
        self.result: Optional[dict] = None
        self.raw = self.dir / f"net-{self.port}.json"

    def __enter__(self):
        tools.ensure_tracefs()
        self.dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, BPFTRACE_STRLEN="16")
        with open(self.raw, "wb") as o, open(self.dir / f"net-{self.port}.stderr", "wb") as e:
            self.bt = subprocess.Popen([tools.bpftrace(), "-f", "json", str(SCRIPT),
                                        str(self.port)], stdout=o, stderr=e, env=env,
                                       stdin=subprocess.DEVNULL)
        t0 = time.monotonic()
        while READY not in self.raw.read_text(errors="replace"):
            if self.bt.poll() is not None:
                err = (self.dir / f"net-{self.port}.stderr").read_text(errors="replace")
                tail = [l for l in err.splitlines() if "RLIMIT_MEMLOCK" not in l and l.strip()]
                raise JvmosError("the network counter (bpftrace net.bt) failed: "
                                 + (tail[-1] if tail else f"exit {self.bt.returncode}"))
            if time.monotonic() - t0 > self.ready_timeout:
                self._stop()
                raise JvmosError(f"the network counter did not start within "
                                 f"{self.ready_timeout:.0f} s")
            time.sleep(0.05)
        return self

    def _stop(self):
        if self.bt and self.bt.poll() is None:
            tools.interrupt_bpftrace(self.bt, timeout=60)

    def __exit__(self, *exc):
        self._stop()
        self.result = parse(self.raw.read_text(errors="replace"))
        return False


def loopback_counters() -> Dict[str, int]:
    """lo's cumulative counters from /proc/net/dev: rx/tx packets and bytes."""
    with open("/proc/net/dev") as f:
        for line in f:
            name, _, rest = line.partition(":")
            if name.strip() == "lo":
                v = [int(x) for x in rest.split()]
                return {"rx_bytes": v[0], "rx_packets": v[1], "tx_bytes": v[8],
                        "tx_packets": v[9]}
    raise JvmosError("no lo interface in /proc/net/dev")
