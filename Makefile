# rldoctor: `make demo` and `make test` work from a fresh clone.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install system-tools bytecode demo test test-fast golden clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first and pinned: on this machine 2.13.0 is a local CPU build; anything else pulls GBs of CUDA
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[cluster,test]'
	touch $(STAMP)

install: $(STAMP)

# Debian packages the tests use: Prometheus's server and promtool (`watch` and the shipped alert
# rules), `ip` and `iptables` (the multi-host tests, as root). Idempotent: nothing to do when all
# are there. Prometheus's own service is stopped and disabled: tests start their own server on a
# free port with their own data dir. The namespaces of a test run are removed after it, pass or fail.
system-tools:
	@missing=""; \
	for tool in promtool:prometheus prometheus:prometheus ip:iproute2 iptables:iptables; do \
	  command -v $${tool%%:*} >/dev/null 2>&1 || missing="$$missing $${tool#*:}"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then echo "not root: cannot install$$missing"; exit 0; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends -o DPkg::Lock::Timeout=300 $$missing || exit 1; \
	  (systemctl disable --now prometheus || service prometheus stop) >/dev/null 2>&1 || true; \
	fi

demo: $(STAMP) system-tools
	$(PY) tests/localcluster.py demo

# rldoctor's and the tests' own modules compiled once: where PYTHONDONTWRITEBYTECODE is set
# (as on this machine), every rldoctor, probe and driver process compiled them from source again
# (0.06 CPU-s a check). pip compiled the installed packages already.
bytecode: $(STAMP)
	@$(PY) -m compileall -q doctor checks tests >/dev/null || true  # a file that does not compile fails its tests instead

# Two tests at a time, each module whole, the slowest first, timing-sensitive tests alone
# (tests/suite_plan.py); the slowest 25 tests' setup and call times at the end.
test: $(STAMP) system-tools bytecode
	$(PY) -m pytest -n 2 --durations=25; \
	  status=$$?; $(PY) tests/netns.py clean; exit $$status

test-fast: $(STAMP) system-tools bytecode
	$(PY) -m pytest -n 2 -m "not cluster and not slow"

# Regenerate fixtures/golden/ (every fixture's table, Markdown and JSON report) after a change
# you mean to the words or the layout; review `git diff fixtures/golden` (tests/golden.py).
golden: $(STAMP)
	$(PY) tests/golden.py --update

clean:
	rm -rf $(VENV) build *.egg-info
