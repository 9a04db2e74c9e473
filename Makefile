# rldoctor: `make demo` and `make test` work from a fresh clone.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install prometheus demo test test-fast clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first and pinned: on this machine 2.13.0 is a local CPU build; anything else pulls GBs of CUDA
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# Prometheus's server and promtool, for the watch tests and the shipped alert rules (Debian's
# package). Idempotent: nothing to do when promtool is there. The package's own service is
# stopped and disabled: tests start their own server on a free port with their own data dir.
prometheus:
	@command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1 || { \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus; \
	  (systemctl disable --now prometheus || service prometheus stop) >/dev/null 2>&1 || true; }

demo: $(STAMP) prometheus
	$(PY) tests/localcluster.py demo

test: $(STAMP) prometheus
	$(PY) -m pytest

test-fast: $(STAMP) prometheus
	$(PY) -m pytest -m "not cluster and not slow"

clean:
	rm -rf $(VENV) build *.egg-info
