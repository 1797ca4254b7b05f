"""Looking after the file (perseus_vault_core/features/upkeep.py), called as the facade calls it: stats counts
what was written, check finds nothing wrong in a sound file, reindex rebuilds and checks, backup copies to a
folder that exists and refuses one that does not, rekey refuses an unencrypted vault; refusals change nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from perseus_vault_core import Conflict, InvalidInput, Vault
from perseus_vault_core.contract.params import BackupParams, NoParams, RekeyParams
from perseus_vault_core.features import upkeep


def test_the_file_s_upkeep(vault: Vault, tmp_path: Path) -> None:
    engine = vault.engine
    vault.remember(category="fact", key="db", content="We use Postgres.")
    assert upkeep.stats(engine, NoParams()).entities == 1
    assert upkeep.check(engine, NoParams()).ok
    assert upkeep.reindex(engine, NoParams()).ok
    copy = upkeep.backup(engine, BackupParams(target=str(tmp_path / "copy.db")))
    with Vault(copy, embedder=False) as restored:
        assert restored.stats().entities == 1
    with pytest.raises(InvalidInput, match="does not exist"):
        upkeep.backup(engine, BackupParams(target=str(tmp_path / "nowhere" / "copy.db")))
    with pytest.raises(Conflict, match="not encrypted"):
        upkeep.rekey(engine, RekeyParams(new_key="another key"))
    assert upkeep.stats(engine, NoParams()).entities == 1
