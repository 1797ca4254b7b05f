"""The inspector's views, a module each: what one URL shows, from the vault's public verbs only."""
