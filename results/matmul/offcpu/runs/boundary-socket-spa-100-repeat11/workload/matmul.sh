#!/bin/sh
# one recorded run of jvmos run matmul: the manager JVM and its k worker JVMs
d=results/matmul/offcpu/runs/boundary-socket-spa-100-repeat11/workload
/usr/lib/jvm/java-17-openjdk-amd64/bin/java -jar /work/main/workloads/java/matmul/target/jvmos-matmul.jar --algorithm spa --n 100 --seed 1 --repeat 11 --max-seconds 600 --mechanism socket --k 4 --worker-start-timeout 30 > "$d/manager.out" &
m=$!
echo $m > "$d/manager.pid"
wait $m
