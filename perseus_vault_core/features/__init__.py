"""The memory features, each a module named by its concept and lent the engine (docs/architecture.md):

- :mod:`.remembering`: ``remember`` and what a new memory repeats or updates;
- :mod:`.graph`: links and walks; :mod:`.graphrag`: communities, their summaries, recall across them;
- :mod:`.proactive`: ``recall_when`` triggers and ``prepare``;
- :mod:`.temporal`: history and time travel; :mod:`.scan` and :mod:`.counts`: the whole store, in pages
  and in numbers;
- :mod:`.hygiene`: the low-signal memories; :mod:`.conversations`: a chat's turns;
- :mod:`.memory_files`: named markdown files of dated entries;
- :mod:`.import_export`: JSONL copies; :mod:`.backfill`: the ``embed`` verb.
"""
