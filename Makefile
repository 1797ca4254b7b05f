# One-word entry points. `make demo` and `make test` work on a fresh machine.
VENV  := .venv
STAMP := $(VENV)/.installed

.PHONY: setup demo test bench clean

$(STAMP): pyproject.toml scripts/setup.sh
	./scripts/setup.sh
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	./scripts/demo.sh

test: $(STAMP)
	$(VENV)/bin/python -m mypy
	$(VENV)/bin/python -m pytest

bench: $(STAMP)
	$(VENV)/bin/python -m pip install --quiet -e ".[bench]"
	$(VENV)/bin/python -m benchmarks.run $(ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
