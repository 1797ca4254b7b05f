"""PostgreSQL with pgvector, the second backend: being built behind the storage seam (:mod:`..base`).

Built so far: :mod:`.connection`, psycopg 3 connections that take the shared SQL in SQLite's parameter
styles. The schema, keyword and vector search, the change log and maintenance follow; until they are
in, a ``postgresql://`` path is refused when a vault is opened (params/opening.py), never taken for a file.
"""
