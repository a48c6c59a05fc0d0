# Two entry points for a fresh clone: `make demo` (the main job) and `make test` (the default checks).
# Both bootstrap a local virtual environment in .venv from nothing but Python 3.11.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: venv demo test lint bench clean

venv: $(STAMP)

# Reinstall when the dependency list changes.
$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: venv
	$(BIN)/kafkaref demo

lint: venv
	$(BIN)/ruff check .

# The default test run: lint, then every test not marked slow or cluster, deterministic
# (Hypothesis 'ci' profile). Deeper runs are tox environments; see docs/contributing.md.
test: lint
	HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-ci} $(BIN)/python -m pytest

clean:
	rm -rf $(VENV) .tox .pytest_cache .hypothesis build *.egg-info
