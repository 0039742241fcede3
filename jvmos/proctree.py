"""The traced process tree as the manifest and the analyzers see it: its pids, their commands
and the libjvm.so each maps, polled from /proc while a recording runs (the engine follows the
tree itself, in the kernel)."""
import os
import threading
from typing import Dict

from jvmos import JvmosError
from jvmos.jdk import jvm_of_executable, jvm_of_pid


# JDK launchers whose binary names the JVM they will load (ProcessTree)
LAUNCHERS = ("java", "javaw")


class ProcessTree(threading.Thread):
    """Polls the traced process tree: pids, their commands and the libjvm.so each maps (the
    engine follows the tree itself; this is what the manifest and the analyzers read)."""

    def __init__(self, root: int):
        super().__init__(daemon=True)
        self.root = root
        self.pids: Dict[int, dict] = {}
        self.stop = threading.Event()

    def scan(self):
        parents = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open(f"/proc/{d}/stat") as f:
                        s = f.read()
                    parents[int(d)] = int(s[s.rindex(")") + 2:].split()[1])
                except (OSError, ValueError, IndexError):
                    pass
        tree = {self.root}
        changed = True
        while changed:
            changed = False
            for p, pp in parents.items():
                if pp in tree and p not in tree:
                    tree.add(p)
                    changed = True

        for p in tree:
            info = self.pids.setdefault(p, {"pid": p})
            try:
                info["cmdline"] = open(f"/proc/{p}/cmdline", "rb").read().split(b"\0")[:-1]
                info["cmdline"] = [a.decode(errors="replace") for a in info["cmdline"]]
                if "jvm" not in info:
                    j = jvm_of_pid(p)
                    if j:
                        info["jvm"] = j.as_dict()
                    elif "jvm_from_launcher" not in info:
                        # a JDK's launcher between its exec and its dlopen of libjvm.so (a
                        # short run can end before a later scan): the JVM of that launcher,
                        # until the maps say otherwise
                        exe = os.readlink(f"/proc/{p}/exe")
                        j = jvm_of_executable(exe) if os.path.basename(exe) in LAUNCHERS \
                            else None
                        if j:
                            info["jvm_from_launcher"] = j.as_dict()
            except (OSError, JvmosError):
                pass

    def run(self):
        while not self.stop.is_set():
            try:
                self.scan()
            except OSError:
                pass
            self.stop.wait(0.1)
