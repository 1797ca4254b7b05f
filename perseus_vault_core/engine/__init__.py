"""The engine (:mod:`.engine`): what every verb shares, held once per open vault, and recall wired to its
arms. The features are lent it; the facade opens it (docs/architecture.md).
"""
