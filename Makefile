# Self-bootstrapping targets: a fresh machine needs only python3 (>= 3.11) and make.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install test soak check demo lint layers completions clean java reference prometheus protos

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml setup.py $(wildcard mqtools/*/*.pyx mqtools/*/*.pxd mqtools/*/*/*.pyx mqtools/*/*/*/*.pyx)
	$(BIN)/pip install -q -e '.[dev,spark,mcp,proxy]'
	@# rocketmq==0.4.4 (C++ client) and rocketmq-python-client (5.x, gRPC) both ship rocketmq/__init__.py: the 5.x
	@# client needs its own (the C++ client's is empty and works under either), so it is written last.
	$(BIN)/pip install -q --no-deps --force-reinstall rocketmq-python-client==5.1.2
	touch $(STAMP)

install: $(STAMP) java

# Spark needs a Java runtime; install one only when none is present.
java:
	@command -v java >/dev/null 2>&1 || { \
	  echo "java not found: installing a JRE with apt-get"; \
	  SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q default-jre-headless; }

# Prometheus and promtool for the metrics tests (a real server scrapes `mq exporter`; promtool checks the
# shipped alert rules): Debian's package, installed only when missing.
prometheus:
	@command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 || { \
	  echo "prometheus not found: installing it with apt-get"; \
	  SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends prometheus; }

# The layering contracts in pyproject.toml.
layers: install
	$(BIN)/lint-imports --no-cache --no-logo

# Apache RocketMQ for tests/reference (and bench/reference.py): fetched by package name with Maven into
# ~/.cache/mq-reference (MQ_REFERENCE_CACHE), with our Java harness built on its client. A set already
# fetched is not fetched again, so later runs are offline. A failed fetch does not stop the suite: the
# reference tests then fail with one line saying to run `make reference`.
reference: install
	-$(BIN)/python tests/reference/fetch.py

# Everything but the soak tier in one run on three workers: a unit of work per file, except that every test
# that starts JVMs or the SparkSession (reference/, spark/) is one unit, run in its order on one worker, so there
# is never more than one JVM cluster; the other two take the files of our own processes (mostly waiting on
# sockets) beside it. The JVM unit is the longest (about 27 of the run's minutes) and starts first. The unit and
# store suites run a second time on the pure-Python forms (the compiled codec, frame loop, send and put, built at
# install where a C compiler is present, are what the first run uses; the unit suite holds each to its Python
# twin). Tests marked `soak` (a combination another test already proves on the other Apache version, fault or
# deployment) are left to `make soak`.
test: install layers reference prometheus
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "not soak" -n 3 --dist loadgroup --durations=40 tests/unit tests/integration tests/compat tests/tui tests/spark tests/reference
	MQ_PURE_PYTHON=1 $(BIN)/python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile tests/unit tests/integration/store

# The long combinations make test leaves out, one at a time (they start JVM clusters and Spark).
soak: install reference prometheus
	$(BIN)/python -m pytest -q -p no:cacheprovider -m soak --durations=15 tests/integration tests/spark tests/reference

# The fast tier for the edit-test loop (under 3 minutes on 2 cores): lint, the layer contracts and the unit
# tests, which include the CLI's help goldens and every document kind rendered from hand-made models.
check: lint layers
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 2 tests/unit

lint: install
	$(BIN)/ruff check .

demo: install
	$(BIN)/python -m mqtools.demo

docs: install ; $(BIN)/python -m mqtools.cli.reference docs/reference.md

# The proxy's generated apache.rocketmq.v2 modules, from the .proto files beside them (kept in the tree, so an
# install needs no protoc; grpcio-tools is a dev dependency).
protos: install
	$(BIN)/python -m mqtools.apis.generate

completions: install
	$(BIN)/python -m mqtools.cli.completions completions

clean:
	rm -rf $(VENV) build *.egg-info tests/reference/java/target
