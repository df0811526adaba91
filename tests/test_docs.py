"""Generated documentation is current."""

from __future__ import annotations

from pathlib import Path

from netfl.config.docs import render

ROOT = Path(__file__).resolve().parents[1]


def test_scenario_reference_is_current():
    current = (ROOT / "docs" / "scenario.md").read_text()
    assert current == render(), "regenerate: python -m netfl.config.docs > docs/scenario.md"


def test_every_scenario_key_is_documented():
    from netfl.config.scenario import Scenario

    def walk(model):
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name} has no description"
            for sub in _models(field.annotation):
                walk(sub)

    walk(Scenario)


def _models(annotation):
    from pydantic import BaseModel

    from netfl.config.docs import _flatten, _is_distribution

    if _is_distribution(annotation):
        return []
    out = []
    for arg in _flatten(annotation):
        args = getattr(arg, "__args__", ())
        for a in (arg, *args):
            if isinstance(a, type) and issubclass(a, BaseModel):
                out.append(a)
    return out
