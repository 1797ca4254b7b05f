"""Perseus Vault's benchmarks: `python -m benchmarks.run` writes docs/benchmarks.md."""
