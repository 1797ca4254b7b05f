"""Storage backends behind one seam (:mod:`.base` says what a backend provides; docs/architecture.md).

:mod:`.sqlite` is the embedded file, the default and today the only backend.
"""

from .base import Backend, ChangeLog, Connection, Cursor, KeywordMirror, KeywordStore, Tokenizer, VectorStore

__all__ = ["Backend", "ChangeLog", "Connection", "Cursor", "KeywordMirror", "KeywordStore", "Tokenizer", "VectorStore"]
