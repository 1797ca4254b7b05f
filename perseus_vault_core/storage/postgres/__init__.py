"""PostgreSQL with pgvector, the second backend behind the storage seam (:mod:`..base`; docs/postgres.md).

- :mod:`.connection`: psycopg 3 connections that take the shared SQL in SQLite's dialect (parameter
  styles, ``CROSS JOIN``), and SERIALIZABLE write transactions retried whole on a conflict;
- :mod:`.schema`: the shared tables with the SQLite schema's columns, the change log, the keyword
  postings, ``pv_decay`` and the versions' immutability, as numbered migrations applied once by hosts
  that open one database at once;
- :mod:`.changes`: the change log, appended in commit order by concurrent writers;
- :mod:`.keyword`: BM25 as the SQLite backend ranks, over postings tokenized as FTS5 tokenizes;
- :mod:`.vectors`: vectors as bytes and as a pgvector column with an HNSW index, scored exactly;
- :mod:`.maintenance`: stats, check, reindex;
- :mod:`.backend`: :class:`PostgresBackend`, which holds one connection per thread (as the SQLite backend
  does), and the database's clock: every host stamps its versions with the server's time, not its own.

Its URL's helpers (telling one from a path, taking credentials out) are :mod:`..urls`, shared with the engine.
"""
