"""The agent's configuration (jvmos agent): its options and its TOML file, read into one Config;
--match conditions on a JVM's user, main class and jar."""
import fnmatch
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Tuple

from jvmos import JvmosError
from jvmos.catalogue import LAYERS

if TYPE_CHECKING:      # discovery imports nothing of this module
    from jvmos.discovery import JvmProc

DEFAULT_LAYERS = ("io",)
DEFAULT_LISTEN = "127.0.0.1:9377"
DEFAULT_INTERVAL_S = 5.0
DEFAULT_SCAN_S = 1.0
DEFAULT_MAX_OVERHEAD_PCT = 2.0
DEFAULT_BACKOFF_S = 60.0
MATCH_KEYS = ("user", "main", "jar")
CONFIG_KEYS = ("layers", "match", "max_overhead", "interval", "scan", "shed_backoff",
               "listen", "platform", "max_jvms", "sample", "sample_every", "sample_window",
               "otlp_endpoint", "otlp_every")
DEFAULT_SAMPLE_EVERY_S = 60.0
DEFAULT_SAMPLE_WINDOW_S = 5.0
DEFAULT_OTLP_EVERY_S = 15.0


# --------------------------------------------------------------------------- configuration

@dataclass(frozen=True)
class Match:
    """One --match: every condition (key, shell pattern) must hold."""
    conditions: Tuple[Tuple[str, str], ...]
    text: str = ""

    def matches(self, proc: "JvmProc") -> bool:
        for key, pat in self.conditions:
            if key == "user":
                cands = [proc.user, str(proc.uid)]
            elif key == "main":
                cands = [proc.main_class]
            else:
                cands = ([proc.jar, os.path.basename(proc.jar), proc.jar_path]
                         if proc.jar else [])
            if not any(c and fnmatch.fnmatchcase(c, pat) for c in cands):
                return False
        return True


def parse_match(text: str) -> Match:
    conds = []
    for part in [p.strip() for p in str(text).split(",")]:
        key, eq, pat = part.partition("=")
        key = key.strip()
        if not eq or key not in MATCH_KEYS:
            raise JvmosError(f"--match {text!r}: each condition is KEY=PATTERN with KEY one of "
                             f"{', '.join(MATCH_KEYS)} (e.g. --match user=app,main=com.example.*)")
        if not pat.strip():
            raise JvmosError(f"--match {text!r}: {key}= needs a pattern")
        conds.append((key, pat.strip()))
    return Match(tuple(conds), str(text))


def parse_max_overhead(text) -> Optional[float]:
    """A percentage of the JVM's CPU time ("2%", "2", 2.5), or None for no limit ("none")."""
    if isinstance(text, bool):
        raise JvmosError(f"--max-overhead {text!r}: give a percentage such as 2% (or none)")
    if isinstance(text, (int, float)):
        v = float(text)
    else:
        s = str(text).strip().lower()
        if s in ("none", "off"):
            return None
        try:
            v = float(s[:-1] if s.endswith("%") else s)
        except ValueError:
            raise JvmosError(f"--max-overhead {text!r}: give a percentage of the JVM's CPU "
                             "time such as 2% (or none for no limit)")
    if not math.isfinite(v) or v <= 0 or v >= 100:
        raise JvmosError(f"--max-overhead {text!r}: the limit is a share of the JVM's CPU "
                         "time, above 0% and below 100% (none: no limit)")
    return v


def parse_listen(text: str) -> Tuple[str, int]:
    s = str(text).strip()
    host, sep, port = s.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise JvmosError(f"--listen {text!r}: give HOST:PORT, e.g. 127.0.0.1:9377 or [::1]:9377")
    return host, int(port)


def parse_otlp_endpoint(value) -> Optional[str]:
    """An OTLP/HTTP collector's base URL (http or https, a host, a port if not the
    scheme's; the path /v1/metrics is added); None or "" is no push."""
    if value is None or str(value).strip() == "":
        return None
    from urllib.parse import urlsplit
    text = str(value).strip()
    try:
        u = urlsplit(text)
        u.port                                  # a port that is no number raises here
    except ValueError:
        u = None
    if u is None or u.scheme not in ("http", "https") or not u.hostname \
            or u.query or u.fragment:
        raise JvmosError(f"--otlp-endpoint {value!r}: give the collector's OTLP/HTTP base URL, "
                         "e.g. http://127.0.0.1:4318 (/v1/metrics is added)")
    return text.rstrip("/")


def parse_layers(value) -> Tuple[str, ...]:
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    layers = tuple(dict.fromkeys(str(x).strip() for x in items if str(x).strip()))
    if not layers:
        raise JvmosError("--layers: name at least one layer")
    for layer in layers:
        if layer not in LAYERS:
            raise JvmosError(f"unknown layer '{layer}' (known: {', '.join(LAYERS)})")
    return layers


def _positive(name: str, value) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise JvmosError(f"--{name} {value!r}: give a positive number of seconds")
    if not math.isfinite(v) or v <= 0:
        raise JvmosError(f"--{name} {value!r}: give a positive number of seconds")
    return v


def _at_least(name: str, value, low: float) -> float:
    v = _positive(name, value)
    if v < low:
        raise JvmosError(f"--{name} {value!r}: give {low:g} seconds or more")
    return v


def parse_max_jvms(value) -> Optional[int]:
    """--max-jvms: a positive whole number, or None (no cap)."""
    if value is None:
        return None
    try:
        n = int(str(value))
    except ValueError:
        n = 0
    if n <= 0:
        raise JvmosError(f"--max-jvms {value!r}: give a positive whole number of JVMs")
    return n


@dataclass
class Config:
    layers: Tuple[str, ...] = DEFAULT_LAYERS
    match: Tuple[Match, ...] = ()
    max_overhead_pct: Optional[float] = DEFAULT_MAX_OVERHEAD_PCT
    interval_s: float = DEFAULT_INTERVAL_S
    scan_s: float = DEFAULT_SCAN_S
    shed_backoff_s: float = DEFAULT_BACKOFF_S
    listen: Tuple[str, int] = ("127.0.0.1", 9377)
    platform: Optional[str] = None
    config_file: Optional[Path] = None
    max_jvms: Optional[int] = None       # None: every selected JVM is watched
    # --sample: async-profiler for sample_window_s of every sample_every_s (jvmos/profiles.py)
    sample: bool = False
    sample_every_s: float = DEFAULT_SAMPLE_EVERY_S
    sample_window_s: float = DEFAULT_SAMPLE_WINDOW_S
    # --otlp-endpoint: the metrics pushed to a collector every otlp_every_s (jvmos/otlp.py)
    otlp_endpoint: Optional[str] = None
    otlp_every_s: float = DEFAULT_OTLP_EVERY_S

    def selects(self, proc: "JvmProc") -> bool:
        return not self.match or any(m.matches(proc) for m in self.match)

    def describe(self) -> str:
        return (f"layers {','.join(self.layers)}, --mode count, max overhead "
                + (f"{self.max_overhead_pct:g}% of each JVM's CPU" if self.max_overhead_pct
                   else "none")
                + f", interval {self.interval_s:g} s, scan {self.scan_s:g} s, "
                + ("every JVM" if not self.match else
                   "JVMs matching " + " or ".join(repr(m.text) for m in self.match))
                + (f", at most {self.max_jvms}" if self.max_jvms else "")
                + (f", CPU profiles of {self.sample_window_s:g} s every "
                   f"{self.sample_every_s:g} s" if self.sample else "")
                + (f", OTLP push to {self.otlp_endpoint} every {self.otlp_every_s:g} s"
                   if self.otlp_endpoint else ""))


def read_config_file(path: Path) -> dict:
    """The agent's TOML file: the long options' names (underscores for dashes), e.g.
    layers = ["io", "threads"], match = ["user=app"], max_overhead = "2%"."""
    try:
        import tomllib
    except ImportError:       # Python < 3.11
        raise JvmosError("--config needs Python 3.11 or later (tomllib)")
    try:
        data = tomllib.loads(Path(path).read_text())
    except OSError as e:
        raise JvmosError(f"--config {path}: {e.strerror or e}")
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise JvmosError(f"--config {path}: not valid TOML ({e})")
    bad = sorted(set(data) - set(CONFIG_KEYS))
    if bad:
        raise JvmosError(f"--config {path}: unknown key(s) {', '.join(bad)} "
                         f"(known: {', '.join(CONFIG_KEYS)})")
    return data


def build_config(args, file_data: Optional[dict] = None) -> Config:
    """The configuration: the file's values, overridden by the options given on the command
    line (args: the parsed options, None where not given)."""
    d = dict(file_data or {})
    for key in CONFIG_KEYS:
        v = getattr(args, key, None)
        if v is not None:
            d[key] = v
    match = d.get("match") or []
    if isinstance(match, str):
        match = [match]
    if not isinstance(match, (list, tuple)):
        raise JvmosError("match: give a list of KEY=PATTERN conditions")
    cfg = Config(
        layers=parse_layers(d.get("layers", DEFAULT_LAYERS)),
        match=tuple(parse_match(m) for m in match),
        max_overhead_pct=parse_max_overhead(d.get("max_overhead", DEFAULT_MAX_OVERHEAD_PCT)),
        interval_s=_positive("interval", d.get("interval", DEFAULT_INTERVAL_S)),
        scan_s=_positive("scan", d.get("scan", DEFAULT_SCAN_S)),
        shed_backoff_s=_positive("shed-backoff", d.get("shed_backoff", DEFAULT_BACKOFF_S)),
        listen=parse_listen(d.get("listen", DEFAULT_LISTEN)),
        platform=d.get("platform"),
        max_jvms=parse_max_jvms(d.get("max_jvms")),
        sample=_bool("sample", d.get("sample", False)),
        sample_every_s=_positive("sample-every", d.get("sample_every", DEFAULT_SAMPLE_EVERY_S)),
        sample_window_s=_positive("sample-window",
                                  d.get("sample_window", DEFAULT_SAMPLE_WINDOW_S)),
        otlp_endpoint=parse_otlp_endpoint(d.get("otlp_endpoint")),
        otlp_every_s=_at_least("otlp-every", d.get("otlp_every", DEFAULT_OTLP_EVERY_S), 1.0),
        config_file=Path(args.config) if getattr(args, "config", None) else None)
    if cfg.sample and cfg.sample_window_s >= cfg.sample_every_s:
        raise JvmosError(f"--sample-window {cfg.sample_window_s:g} must be shorter than "
                         f"--sample-every {cfg.sample_every_s:g}")
    return cfg


def _bool(name: str, v) -> bool:
    if isinstance(v, bool):
        return v
    raise JvmosError(f"{name}: give true or false, got {v!r}")


def load_config(args) -> Config:
    data = read_config_file(Path(args.config)) if getattr(args, "config", None) else None
    return build_config(args, data)
