"""In-memory indexes that mirror the backend's current versions for fast recall (see :mod:`.mirror`).

They follow the backend's change log (:class:`storage.ChangeLog`), so they answer for exactly the
snapshot a reader sees; when one cannot, the backend's own search answers instead.
"""
