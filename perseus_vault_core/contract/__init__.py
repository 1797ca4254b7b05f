"""The contract: what goes into the vault and what comes out, in the words every layer speaks.

- :mod:`.params`: one strict params model per verb (names, types, bounds, defaults, meanings);
- :mod:`.models`: the typed values every verb returns;
- :mod:`.errors`: the one error tree;
- :mod:`.verbs`: the registry that describes each verb once (params, result, behaviour);
- :mod:`.where`: the ``where`` filter language the params accept;
- :mod:`.memory_names`: what the memory-file layer's entities are called and what its names may be;
- :mod:`.text`: what a stored text may hold, and how a text is cut to fit a page;
- :mod:`.readable`: a result as the compact text a model reads.

The bottom layer: it imports nothing else of the core, and every other layer may import it
(docs/architecture.md).
"""
