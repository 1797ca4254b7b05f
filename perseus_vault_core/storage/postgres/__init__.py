"""PostgreSQL with pgvector, the second backend: being built behind the storage seam (:mod:`..base`).

Built so far:

- :mod:`.connection`: psycopg 3 connections that take the shared SQL in SQLite's parameter styles, and
  SERIALIZABLE write transactions retried whole when Postgres cancels one for a conflict;
- :mod:`.schema`: the shared tables with the SQLite schema's columns, the change log, ``pv_decay`` and the
  versions' immutability, as numbered migrations that hosts opening one database at once apply once;
- :mod:`.changes`: the change log, appended in commit order by concurrent writers (an advisory lock held
  from the append to the commit), read by the shared readers of :mod:`..changelog`.

Keyword search (BM25), vector search (pgvector), the backend class and maintenance follow; until
they are in, a ``postgresql://`` path is refused when a vault is opened (params/opening.py), never taken
for a file.
"""
