"""Memory files: import an Obsidian-style folder, then ask how a view evolved.

python examples/memory_files.py
"""

import tempfile
from pathlib import Path

from perseus_vault_core import Vault

root = Path(tempfile.mkdtemp())
about = root / "obsidian" / "About Me"
about.mkdir(parents=True)
(about / "Opinions.md").write_text(
    "# Opinions\n\n"
    "## Testing\n"
    "- 2019-03-04: Unit tests feel like busywork; I would rather ship and fix bugs as they come.\n"
    "- 2020-07-15: After the billing outage I changed my mind: integration tests catch what matters.\n"
    "- 2024-05-02: My testing philosophy now: test behaviour at the boundaries, never private helpers.\n\n"
    "## Work pace\n"
    "- 2021-02-14: Burnout taught me that sustainable pacing beats heroics.\n",
    encoding="utf-8",
)

with Vault(root / "memory.db") as vault:
    report = vault.memory_import(root / "obsidian", bind=True)
    print(f"imported {report.entries_created} entries from {report.files} file(s)")

    result = vault.memory_recall("testing philosophy")
    print(f"\n{result.total} entries ({result.search_mode}), oldest first:")
    for e in result.entries:
        print(f"  {e.date}  {e.section}: {e.text}")
    assert [e.date for e in result.entries] == sorted(e.date for e in result.entries)

    original = (about / "Opinions.md").read_bytes()
    vault.add_memory(
        "Opinions", "Testing", "Property-based tests find what I would not think of.", date="2026-01-01"
    )
    print("\nafter add_memory:\n" + vault.get_memory("Opinions", "Testing").text)
    vault.delete_memory("Opinions", "Testing", date="2026-01-01")
    assert (about / "Opinions.md").read_bytes() == original  # byte for byte
    print("after delete_memory the file is byte-identical to the original")
