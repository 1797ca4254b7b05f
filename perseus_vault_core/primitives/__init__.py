"""The primitives that storage, the indexes and recall share, beneath all three (docs/architecture.md).

Pure functions: BM25 and FTS5's tokenizing (:mod:`.bm25`), the Porter stemmer (:mod:`.porter`), query
terms (:mod:`.query`), vector arithmetic (:mod:`.dense`), a memory's decay (:mod:`.decay`), the SQL of a
read's view and of a ``where`` filter (:mod:`.filters`, :mod:`.where_sql`) in each dialect
(:mod:`.dialect`), the scope key (:mod:`.scopes`). The DB-API shapes (:mod:`.dbapi`); what a recall arm
returns, and the walk that keeps its visible hits (:mod:`.hits`). And the process's guards: fork safety
(:mod:`.forking`), the background threads a vault ends before it closes (:mod:`.background`), giving up
on a long read (:mod:`.cancel`), and the secrets the vault reads (:mod:`.keys`).

They import only the contract (:mod:`..contract`) and one another.
"""
