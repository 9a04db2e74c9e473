# rldoctor: `make demo` and `make test` work from a fresh clone.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install netns-tools demo test test-fast clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first and pinned: on this machine 2.13.0 is a local CPU build; anything else pulls GBs of CUDA
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(PY) tests/localcluster.py demo

# The multi-host tests (tests/test_e2e_ports.py) make hosts of network namespaces and need `ip`
# and Debian's `iptables` (as root); the namespaces of a run are removed after it, pass or fail.
netns-tools:
	@command -v ip >/dev/null && command -v iptables >/dev/null || { \
	  test "$$(id -u)" = 0 || { echo "not root: the multi-host tests will be skipped"; exit 0; }; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    -o DPkg::Lock::Timeout=300 iptables iproute2; }

test: $(STAMP) netns-tools
	$(PY) -m pytest; status=$$?; $(PY) tests/netns.py clean; exit $$status

test-fast: $(STAMP)
	$(PY) -m pytest -m "not cluster and not slow"

clean:
	rm -rf $(VENV) build *.egg-info
