"""Memories as rows (:mod:`.store`): reading them into :class:`~..contract.models.Entity` values, and the
write path every verb that changes a memory takes, over the storage seam (docs/architecture.md).

Beneath recall and every feature; above storage, the indexes and the embedding contract.
"""
