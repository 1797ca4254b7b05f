"""The memory-file layer (docs/memory-files.md): named markdown files of sections and dated entries,
recalled entry by entry so the evolution of a view is visible.

- what the layer's entities are called, and what a file name or entry date may be: contract/memory_names.py
  (the params models check them);
- :mod:`.parser`: one file's bytes in, sections and dated entries out; :mod:`.edits`: adding and
  removing an entry byte for byte;
- :mod:`.files`: records, folders (a jail), atomic rewrites, export;
- :mod:`.sync`: the reconciling write, the bound folder, the reads of what is stored;
- :mod:`.index`: memory_recall's matching and ranking;
- :mod:`.verbs`: the verbs the facade delegates to.
"""
