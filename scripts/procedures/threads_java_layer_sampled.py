"""Table 5's Java layer from CPU samples (issue 25, item 4): an attempt. The profile was made
with (26 Nov, OpenJDK 17.0.15; the collapsed file, 84 MB, is not kept):

  java -agentpath:build/async-profiler/libasyncProfiler.so=start,event=cpu,interval=10000,ann,collapsed,file=/tmp/nt.collapsed \\
      -cp workloads/java/io/target/jvmos-io.jar org.jvmos.workloads.NoOpThreads --threads 500 --repeat 5 --warmup 1

(its stdout: stdout.json). This script counts the samples under Thread.start, those outside
JVM_StartThread (the Java layer, if the profiler were free), and their leaf frames:

  .venv/bin/python scripts/procedures/threads_java_layer_sampled.py /tmp/nt.collapsed > results/threads/java-layer-sampled/samples.json
"""
import json
import sys
from collections import Counter

from jvmos.analyzers import stacks

st = stacks.parse_collapsed(open(sys.argv[1]).read().splitlines())
start = [(f, n) for f, n in st
         if any(stacks.strip(x).startswith("java/lang/Thread.start") for x in f)]
java_only = [(f, n) for f, n in start if not any(stacks.strip(x) == "JVM_StartThread" for x in f)]
leaves = Counter()
for f, n in java_only:
    leaves[stacks.strip(f[-1])] += n
print(json.dumps({"interval_ns": 10000, "samples_total": sum(n for _, n in st),
                  "samples_in_thread_start": sum(n for _, n in start),
                  "samples_in_thread_start_outside_jvm_startthread":
                      sum(n for _, n in java_only),
                  "top_leaf_frames_outside_jvm_startthread": leaves.most_common(10)}, indent=1))
