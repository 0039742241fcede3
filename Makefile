# jvmos: two commands for a new user (as root, Debian/Ubuntu): `make demo` and `make test`.
# Both install what is missing first and are safe to run again.
# demo: calibrate (first time only), then blocking-io, jni-census and accuracy (~15 min).
VENV   := .venv
PY     := $(VENV)/bin/python
JVMOS  := $(VENV)/bin/jvmos
PYTHON ?= python3

.PHONY: demo test deps venv build unit integration clean doctor

demo: build
	$(JVMOS) doctor
	$(JVMOS) calibrate
	$(JVMOS) run blocking-io --out results/runs/demo-blocking-io-$$(date +%Y%m%d-%H%M%S)
	$(JVMOS) run jni-census --out results/runs/demo-jni-census-$$(date +%Y%m%d-%H%M%S)
	$(JVMOS) run accuracy --out results/runs/demo-accuracy-$$(date +%Y%m%d-%H%M%S)
	$(JVMOS) run threads --out results/runs/demo-threads-$$(date +%Y%m%d-%H%M%S)
	@echo "demo done: tables and recordings are in results/runs/ (newest demo-* directories)"

test: build
	cd workloads/java && mvn -q -B test
	$(PY) -m pytest -q -rs tests

unit: venv
	$(PY) -m pytest -q tests/unit

deps:
	scripts/install-deps.sh

venv: deps $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

build: venv
	$(MAKE) -s -C workloads/c
	cd workloads/java && mvn -q -B -DskipTests package
	scripts/fetch-async-profiler.sh

doctor: build
	$(JVMOS) doctor

clean:
	rm -rf $(VENV) build workloads/c/build workloads/java/*/target
