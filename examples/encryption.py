"""Encrypt a vault at rest: the key from a key file, nothing readable on disk, then a new key.

    python examples/encryption.py [folder]

Needs SQLCipher: pip install 'perseus-vault[encryption]'.
"""

import os
import secrets
import sys
import tempfile
from pathlib import Path

from perseus_vault_core import SetupError, Vault

folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
folder.mkdir(parents=True, exist_ok=True)
path = folder / "secret.db"

# A key file only its owner can read (the vault refuses one that other users can read).
key_file = folder / "vault.key"
key_file.write_text(secrets.token_urlsafe(32) + "\n")
key_file.chmod(0o600)
os.environ["PERSEUS_VAULT_KEY_FILE"] = str(key_file)

with Vault(path, embedder=False) as vault:  # keyword-only keeps the example fast
    vault.remember(
        category="decision",
        key="vendor",
        content="We are negotiating with Hyperion Freight.",
        recall_when=["talking to suppliers"],
    )
    print("encrypted:", vault.stats().encrypted)
    print("recall:", [item.content for item in vault.recall("Hyperion").items])
    on_disk = b"".join(p.read_bytes() for p in folder.glob("secret.db*"))
    print("plaintext on disk while open:", b"Hyperion" in on_disk)

# The wrong key (or none) fails clearly instead of returning garbage.
del os.environ["PERSEUS_VAULT_KEY_FILE"]
try:
    Vault(path, embedder=False)
except SetupError as exc:
    print("without the key:", exc)

# Rekey: from now on only the new key opens the file (the CLI: perseus-vault rekey --new-key-file NEW).
new_key = secrets.token_hex(32)
with Vault(path, embedder=False, key=key_file.read_text().strip()) as vault:
    vault.rekey(f"x'{new_key}'")  # a raw 256-bit key: no passphrase derivation on each open
with Vault(path, embedder=False, key=f"x'{new_key}'") as vault:
    print("after rekey:", [item.content for item in vault.recall("Hyperion").items])
