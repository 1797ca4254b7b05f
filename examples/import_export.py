"""Bulk-load memories from JSONL, export everything (with history and links), restore it elsewhere.

python examples/import_export.py
"""

import io
import json
import tempfile
from pathlib import Path

from perseus_vault_core import Vault

work = Path(tempfile.mkdtemp())
lines = [
    json.dumps({"category": "note", "key": f"n{i}", "content": f"Note number {i} about backups"})
    for i in range(1000)
]

with Vault(work / "a.db") as a:
    report = a.import_jsonl(lines, progress=lambda done, total: None)
    print("imported:", report)
    a.remember("note", "n1", "Note number 1, corrected")
    a.link(1, 2, "next")
    a.export_jsonl(work / "export.jsonl")

with Vault(work / "b.db") as b:
    b.import_jsonl(work / "export.jsonl")
    again = io.StringIO()
    b.export_jsonl(again)

original = (work / "export.jsonl").read_text(encoding="utf-8")
print("lines:", len(original.splitlines()), "identical re-export:", again.getvalue() == original)
assert again.getvalue() == original
