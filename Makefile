# One-word entry points. `make demo` and `make test` work on a fresh machine.
VENV  := .venv
STAMP := $(VENV)/.installed

.PHONY: setup demo test bench clean

# The bundled model's ONNX graph, built (not kept in git): setup.sh writes it; rewritten when its sources change.
GRAPH := perseus_vault_core/embeddings/model/all-MiniLM-L6-v2.onnx
EMB   := perseus_vault_core/embeddings

$(STAMP): pyproject.toml scripts/setup.sh
	./scripts/setup.sh
	touch $(STAMP)

$(GRAPH): $(EMB)/onnx_graph.py $(EMB)/minilm.py $(EMB)/__main__.py | $(STAMP)
	$(VENV)/bin/python -m perseus_vault_core.embeddings
	touch $(GRAPH)

setup: $(STAMP) $(GRAPH)

demo: $(STAMP) $(GRAPH)
	./scripts/demo.sh

test: $(STAMP) $(GRAPH)
	$(VENV)/bin/python -m ruff format --check --quiet .
	$(VENV)/bin/python -m ruff check --quiet .
	$(VENV)/bin/python -m mypy
	$(VENV)/bin/python -m pytest -n auto --dist loadfile

bench: $(STAMP)
	$(VENV)/bin/python -m pip install --quiet -e ".[bench]"
	$(VENV)/bin/python -m benchmarks.run $(ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
