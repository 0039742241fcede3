#!/bin/sh
# one recorded campaign of jvmos run ipc: the server and one client JVM in the traced tree
d=results/ipc/cold-waits/runs/xmlrpc-1/workload
/usr/lib/jvm/java-17-openjdk-amd64/bin/java -cp /work/main/workloads/java/ipc/target/jvmos-ipc.jar org.jvmos.workloads.ipc.IpcServer --primitive xmlrpc --port 0 \
    --port-file "$d/port" --max-seconds 2400 > "$d/server.out" 2> "$d/server.err" &
s=$!
echo $s > "$d/server.pid"
/usr/lib/jvm/java-17-openjdk-amd64/bin/java -cp /work/main/workloads/java/ipc/target/jvmos-ipc.jar org.jvmos.workloads.ipc.IpcClient --primitive xmlrpc --port-file "$d/port" \
    --benchmark VV --size 5 --calls 1 --max-seconds 1800 > "$d/client.out" &
c=$!
echo $c > "$d/client.pid"
wait $c
rc=$?
kill -TERM $s
wait $s
exit $rc
