"""The Java heap's address range of a live JVM, as its own JDK's `jcmd PID GC.heap_info` prints
it (the manifest's `java_heap`; analyzers/mem.py counts the page faults that fell in it).

G1, Parallel, Serial, Epsilon and Shenandoah print the heap's spaces with their addresses,
as `[start, end)` or `[bottom, top, end)` (Serial's old space: four addresses); the range is
the lowest first address and the highest last address of those brackets, read up to the
Metaspace lines. ZGC prints no address: its range is unknown.

jcmd attaches to the JVM: the first attach sends it SIGQUIT and starts a thread in it (the
attach listener), so jvmos runs it only once counting has stopped, and only on a process that
maps libjvm.so and catches SIGQUIT (a JVM run with -Xrs does not: the signal would end it).
"""
import os
import re
import subprocess
from pathlib import Path
from typing import Optional, Tuple

from jvmos import JvmosError
from jvmos.jdk import maps_of

JCMD_TIMEOUT_S = 10.0
SOURCE = "jcmd GC.heap_info"

# a bracket of two or more addresses: "[0x00000000f0000000, 0x0000000100000000)"
_BRACKET = re.compile(r"\[\s*(0x[0-9a-fA-F]+(?:\s*,\s*0x[0-9a-fA-F]+)+)\s*[)\]]")
# the heap's first line, by collector (JDK 8 to 25)
_COLLECTORS = (("garbage-first heap", "G1"), ("PSYoungGen", "Parallel"),
               ("def new generation", "Serial"), ("DefNew", "Serial"), ("ZHeap", "Z"),
               ("Shenandoah Heap", "Shenandoah"), ("Epsilon Heap", "Epsilon"))


def collector_of(text: str) -> Optional[str]:
    for line in text.splitlines():
        s = line.strip()
        for head, name in _COLLECTORS:
            if s.startswith(head):
                return name
    return None


def parse_heap_info(text: str) -> Tuple[Optional[Tuple[int, int]], Optional[str]]:
    """((start, end), collector) of GC.heap_info's output: the lowest first address and the
    highest last address of the address brackets before the Metaspace lines; (None,
    collector) when there is none (ZGC) or they make no range."""
    starts, ends = [], []
    for line in text.splitlines():
        if line.strip().startswith(("Metaspace", "class space")):
            break
        for m in _BRACKET.finditer(line):
            addrs = [int(a, 16) for a in re.split(r"\s*,\s*", m.group(1))]
            starts.append(addrs[0])
            ends.append(addrs[-1])
    coll = collector_of(text)
    if not starts or min(starts) >= max(ends):
        return None, coll
    return (min(starts), max(ends)), coll


def _catches_sigquit(pid: int) -> Optional[bool]:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) & (1 << (3 - 1)))
    except (OSError, ValueError, IndexError):
        return None
    return None


def jcmd_of(pid: int) -> Path:
    """The jcmd of the JDK the process runs: beside its executable (bin/java), reached
    through /proc/PID/root when the process sees another filesystem (a container)."""
    exe = os.readlink(f"/proc/{pid}/exe")
    jcmd = Path(exe).parent / "jcmd"
    try:
        other = os.readlink(f"/proc/{pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt")
    except OSError:
        other = False
    return Path(f"/proc/{pid}/root{jcmd}") if other or not jcmd.exists() else jcmd


def read_java_heap(pid: int, timeout: float = JCMD_TIMEOUT_S) -> dict:
    """The manifest's `java_heap` of a live JVM: {pid, start, end, source, collector} or
    {pid, unknown: why} (and collector when known)."""
    try:
        if not any(os.path.basename(p) == "libjvm.so" for p in maps_of(pid)):
            return {"pid": pid, "unknown": f"pid {pid} maps no libjvm.so: not a JVM"}
        if _catches_sigquit(pid) is False:
            return {"pid": pid, "unknown": f"pid {pid} does not catch SIGQUIT (-Xrs?): jcmd's "
                                           "attach would end it, so it was not run"}
        jcmd = jcmd_of(pid)
    except (OSError, JvmosError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        return {"pid": pid, "unknown": f"pid {pid} could not be read: {why}"}
    if not jcmd.exists():
        return {"pid": pid, "unknown": f"no jcmd beside the JVM's executable ({jcmd}): a JRE "
                                       "without the JDK's tools"}
    # options meant for the target must not reach jcmd's own JVM
    env = {k: v for k, v in os.environ.items()
           if k not in ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS")}
    try:
        r = subprocess.run([str(jcmd), str(pid), "GC.heap_info"], capture_output=True,
                           text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"pid": pid, "unknown": f"{jcmd} {pid} GC.heap_info did not finish within "
                                       f"{timeout:g} s"}
    except OSError as e:
        return {"pid": pid, "unknown": f"{jcmd} could not be run: {e.strerror or e}"}
    rng, coll = parse_heap_info(r.stdout)
    if r.returncode != 0:
        last = (r.stderr.strip() or r.stdout.strip() or "no output").splitlines()[-1]
        return {"pid": pid, "unknown": f"{jcmd} {pid} GC.heap_info exited with status "
                                       f"{r.returncode}: {last[:300]}"}
    if rng is None:
        return {"pid": pid, "collector": coll,
                "unknown": f"GC.heap_info printed no address range of the heap "
                           f"(collector {coll or 'not recognized'}; ZGC prints none)"}
    return {"pid": pid, "start": rng[0], "end": rng[1], "source": SOURCE, "collector": coll}

