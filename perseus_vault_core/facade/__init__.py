"""The facade: :class:`~.vault.Vault`, the one object a user meets, and what stands beside it.

- :mod:`.vault`: every verb, validated into its params model and handed down through ``Vault.call``;
- :mod:`.dispatch`: the one function of a layer below that does each verb's work;
- :mod:`.edge`: how a call enters the engine and how only the vault's error tree leaves it;
- :mod:`.migrate`: a whole vault copied to another backend; :mod:`.roles`: database roles bound to a scope;
- :mod:`.plugins`: the commands other packages add to the command line.
"""
