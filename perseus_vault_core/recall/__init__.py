"""The recall pipeline (docs/recall.md): :mod:`.pipeline` chooses the mode, runs the arms, combines their
scores (:mod:`.fusion`), weighs them with the knobs (:mod:`.ranking`, :mod:`.validity`,
:mod:`.actionability`), curates the first places (:mod:`.curation` judges, :mod:`.curated` gathers),
judges a dialogue's turns in their context (:mod:`.context`), and pages.

It is lent what it needs (the backend, the in-memory indexes, a query embedder: :class:`.arms.Arms`, which
also chooses, for both arms, whether an index or the backend answers) and knows no engine: the engine wires
it (docs/architecture.md).
"""
