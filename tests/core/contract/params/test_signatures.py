"""contract/params/signatures.py: the options TypedDicts rendered from the params models (the committed
options.py is what it renders today) and the type text it writes for a field."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from perseus_vault_core.contract.params import signatures


def test_option_typeddicts_are_generated_from_the_models() -> None:
    committed = Path(signatures.__file__).with_name("options.py").read_text(encoding="utf-8")
    assert committed == signatures.render(), (
        "regenerate: python -m perseus_vault_core.contract.params.signatures > perseus_vault_core/contract/params/options.py"
    )


def test_type_text_covers_times_models_and_literals() -> None:
    from perseus_vault_core.contract.params import RecallParams, RememberInput

    models: set[type[BaseModel]] = set()
    assert (
        signatures.type_text(RememberInput.model_fields["valid_from_ms"].annotation, models)
        == "int | str | dt.datetime | None"
    )
    assert (
        signatures.type_text(RecallParams.model_fields["mode"].annotation, models)
        == "Literal['fts5', 'dense', 'hybrid'] | None"
    )
    assert (
        signatures.type_text(RecallParams.model_fields["fusion"].annotation, models)
        == "Fusion | dict[str, Any] | None"
    )
    assert {m.__name__ for m in models} == {"Fusion"}
