"""jvmos: what the operating system costs a running JVM, measured with eBPF (its own compiled
probes, probes/*.bpf.c, loaded by its engine)."""
import os
from pathlib import Path

__version__ = "0.1.0"

# The project tree (probes/, workloads/, results/). jvmos is installed editable into the
# project's virtualenv, so the package's parent is the tree; JVMOS_HOME overrides it.
ROOT = Path(os.environ.get("JVMOS_HOME") or Path(__file__).resolve().parent.parent)


class JvmosError(Exception):
    """An error the user can act on: printed as one line, exit status 2."""
