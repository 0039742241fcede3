"""The JPetStore-style shop (workloads/java/shop) on embedded Tomcat, as `jvmos run tomcat`
(Figure 2) and `jvmos run heuristic` (Table 7) drive it: the server started and stopped, and
loads of THREADSxPAGES; a level is measured by server.measure_level, as any server's is.
"""
import subprocess
import time
from pathlib import Path
from typing import List, Optional, Tuple

from jvmos import JvmosError
from jvmos import cputime
from jvmos.tools import SHOP_JAR, jar
from jvmos.experiments.common import last_json
# the shop is measured as any server is (server.py)
from jvmos.experiments.server import LAYERS, measure_repeated


def parse_levels(text: str) -> List[Tuple[int, int]]:
    out = []
    for part in text.split(","):
        try:
            t, p = part.lower().split("x")
            t, p = int(t), int(p)
        except ValueError:
            raise JvmosError(f"bad load level '{part}': write THREADSxPAGES, e.g. 10x20")
        if t <= 0 or p <= 0:
            raise JvmosError(f"bad load level '{part}': threads and pages must be positive")
        out.append((t, p))
    return out


class Shop:
    """The petstore server: started, warmed up, loaded, stopped."""

    def __init__(self, java: str, run_dir: Path, page_bytes: int, max_seconds: int = 3600,
                 jvm_args=(), max_threads: int = 500, jar_path: Optional[Path] = None):
        self.java, self.dir, self.page_bytes = java, run_dir, page_bytes
        # the server's jar: a copy of its own lets `jvmos agent --match jar=` select it alone
        self.jar = jar_path or jar(SHOP_JAR)
        self.max_threads = max_threads
        self.jvm_args = list(jvm_args)
        self.max_seconds = max_seconds
        self.proc: Optional[subprocess.Popen] = None
        self.port: Optional[int] = None

    def __enter__(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        port_file = self.dir / "server.port"
        port_file.unlink(missing_ok=True)
        cmd = [self.java, "-Xms1g", "-Xmx1g"] + self.jvm_args + ["-jar", str(self.jar),
               "--page-bytes", str(self.page_bytes), "--max-threads", str(self.max_threads),
               "--min-spare-threads", "4", "--port", "0",
               "--port-file", str(port_file), "--max-seconds", str(self.max_seconds)]
        self.cmd = cmd
        with open(self.dir / "server-stdout.txt", "wb") as o, \
                open(self.dir / "server-stderr.txt", "wb") as e:
            self.proc = subprocess.Popen(cmd, stdout=o, stderr=e)
        t0 = time.monotonic()
        try:
            while not port_file.exists() or not port_file.read_text().strip():
                if self.proc.poll() is not None:
                    raise JvmosError(f"the shop exited ({self.proc.returncode}) before "
                                     f"listening; see {self.dir}/server-stderr.txt")
                if time.monotonic() - t0 > 180:
                    raise JvmosError("the shop did not start listening within 180 s")
                time.sleep(0.1)
            self.port = int(port_file.read_text().strip())
        except (JvmosError, ValueError) as e:
            self.__exit__()             # a shop that never served is not left running
            if isinstance(e, ValueError):
                raise JvmosError(f"the shop wrote a bad port file: {e}")
            raise
        return self

    @property
    def pid(self) -> int:
        """The server's pid (what server.measure_level attaches to)."""
        return self.proc.pid

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def load(self, threads: int, pages: int, keepalive: bool = False,
             max_seconds: int = 900) -> dict:
        cmd = [self.java, "-cp", str(jar(SHOP_JAR)), "org.jvmos.workloads.shop.ShopLoad",
               "--port", str(self.port), "--threads", str(threads), "--pages", str(pages),
               "--max-seconds", str(max_seconds), "--expect-min-bytes", str(self.page_bytes)]
        if keepalive:
            cmd.append("--keepalive")
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=max_seconds + 120)
        res = last_json(r.stdout)
        if r.returncode != 0 or not res:
            tail = (r.stderr.strip().splitlines() or ["no output"])[-1]
            raise JvmosError(f"the load generator failed (exit {r.returncode}): {tail}")
        return res

    def cpu_ns(self) -> int:
        """The server's CPU time so far, ns (its process CPU clock: every thread, those that
        have exited included). JvmosError if the server is gone."""
        try:
            return cputime.process_cpu_ns(self.proc.pid)
        except cputime.ProcessGone as e:
            raise JvmosError(f"the shop's CPU time cannot be read: {e} (did the server exit? "
                             f"see {self.dir}/server-stderr.txt)")


def measure_level(shop: Shop, threads: int, pages: int, out: Path, name: str,
                  keepalive: bool = False, layers=LAYERS, pair: bool = False,
                  repeats: int = 1) -> dict:
    """One load level of THREADS x PAGES, as server.measure_level measures any server's
    (recorded, then bare; pair: a warm pair for the probe effect; repeats: that many times,
    combined by server.combine_repeats)."""
    L = measure_repeated(shop, lambda: shop.load(threads, pages, keepalive), out, name,
                         f"{threads} threads x {pages} pages", repeats, layers=layers,
                         pair=pair, rate_key="pages_per_s")
    return {"threads": threads, "pages": pages,
            "connections": L["recorded"].get("connections"), **L}
