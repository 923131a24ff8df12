# Set-up is automatic: the first `make demo` or `make test` creates .venv with Python >= 3.12 and
# installs tcp-rules with its dev tools; it reinstalls whenever pyproject.toml changes.
PYTHON ?= $(shell for p in python3.12 /root/.pyenv/versions/3.12.1/bin/python3 python3.13 python3; do \
	command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 12))' \
	2>/dev/null && { command -v $$p; break; }; done)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" || { echo "error: Python >= 3.12 not found (set PYTHON=...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/tcpr demo

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/pytest

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
