"""contract/params/options.py: each generated TypedDict holds its params model's fields, less those its verb
takes as named arguments."""

from __future__ import annotations

from perseus_vault_core.contract.params import signatures


def test_each_options_typeddict_holds_its_models_other_fields() -> None:
    from perseus_vault_core.contract.params import options

    for name, (model, named) in signatures.OPTIONS.items():
        typed = getattr(options, name)
        assert set(typed.__annotations__) == set(model.model_fields) - set(named), name


def test_every_option_may_be_left_out() -> None:
    """A verb's options are keyword arguments with the model's defaults: none is required."""
    from perseus_vault_core.contract.params import options

    for name in signatures.OPTIONS:
        typed = getattr(options, name)
        assert typed.__required_keys__ == frozenset(), name
        assert typed.__optional_keys__ == frozenset(typed.__annotations__), name
