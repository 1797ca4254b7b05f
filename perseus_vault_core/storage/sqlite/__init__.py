"""The embedded SQLite backend: one file, FTS5 for keywords, sqlite-vec for vectors.

- :mod:`.connection`: choosing a driver that can load extensions (or encrypt), opening connections
  (WAL, busy timeout, private file mode), read snapshots and write transactions with retries;
- :mod:`.file_checks`: what is looked at before SQLite opens a file (its header, a key, another
  application's database), only while no connection of the process holds it;
- :mod:`.schema`: the tables, the FTS5 indexes and the migrations;
- :mod:`.keyword`: FTS5 search, BM25 as ``bm25()`` computes it, and the writes that keep FTS5 in step;
- :mod:`.vectors`: vectors as blobs with their sign bits, and sqlite-vec's distance functions;
- :mod:`.changes`: the change log the in-memory indexes follow;
- :mod:`.maintenance`: stats, check, reindex, backup;
- :mod:`.backend`: :class:`SQLiteBackend`, which holds them together for one file.
"""
