"""Generated documentation is current."""

from __future__ import annotations

from pathlib import Path

import pytest

from netfl.config.docs import render

ROOT = Path(__file__).resolve().parents[1]


def test_scenario_reference_is_current():
    current = (ROOT / "docs" / "scenario.md").read_text()
    assert current == render(), "regenerate: python -m netfl.config.docs > docs/scenario.md"


def test_feature_reference_is_current_and_complete():
    from netfl.features import DESCRIPTIONS, Feature, markdown

    current = (ROOT / "docs" / "features.md").read_text()
    assert current == markdown(), "regenerate: python -m netfl.features > docs/features.md"
    assert set(DESCRIPTIONS) == set(Feature)


def test_strategy_reference_is_current_and_every_parameter_is_described():
    from netfl.registry import strategies
    from netfl.selection.docs import parameters, render

    current = (ROOT / "docs" / "strategies.md").read_text()
    assert current == render(), "regenerate: python -m netfl.selection.docs > docs/strategies.md"
    registry = strategies()
    for name in registry.entries():
        for param in parameters(registry.load(name)):
            assert param.meaning, f"{name}.{param.name} has no description in its docstring"


def test_show_prints_a_strategy_and_refuses_unknown_ones(capsys):
    from netfl.cli import main

    assert main(["show", "pow_d", "--markdown"]) == 0
    out = capsys.readouterr().out
    assert "| `d` | int or null | `None` |" in out and "d = 2m" in out
    assert main(["show", "pow-d"]) == 2
    assert "did you mean 'pow_d'" in capsys.readouterr().err


def test_aggregation_reference_is_current_and_every_parameter_is_described():
    from netfl.learning.aggregation.docs import render
    from netfl.registry import aggregations
    from netfl.signature_docs import callable_parameters

    current = (ROOT / "docs" / "aggregation.md").read_text()
    assert current == render(), (
        "regenerate: python -m netfl.learning.aggregation.docs > docs/aggregation.md"
    )
    registry = aggregations()
    for name in registry.entries():
        rule = registry.load(name)
        assert getattr(rule, "protocols", None), f"{name} declares no protocols"
        for param in callable_parameters(rule, rule, keyword_only=True):
            assert param.meaning, f"{name}.{param.name} has no description in its docstring"


def test_list_and_show_know_the_aggregation_rules(capsys):
    from netfl.cli import main

    assert main(["list", "aggregation-rules", "--verbose"]) == 0
    listed = capsys.readouterr().out
    for name in ("fedavg", "fednova", "fedavgm", "fedadagrad", "fedadam", "fedyogi"):
        assert f"  {name} " in listed
    assert "beta2 (float, default 0.99)" in listed
    assert main(["show", "fedyogi", "--markdown"]) == 0
    shown = capsys.readouterr().out
    assert "| `tau` | float | `0.001` |" in shown and "sign(v_(t-1) - Delta_t^2)" in shown
    assert main(["show", "fedadm"]) == 2
    assert "did you mean 'fedadam'" in capsys.readouterr().err


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


def _rows(markdown: str, heading: str) -> dict[str, list[str]]:
    """The table under ``## heading``: key -> its cells (type, unit, default, description)."""
    section = markdown.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def test_nested_defaults_are_the_parents_defaults():
    """radio.downlink is a LinkConfig, but its defaults are the downlink's (BS power and
    noise figure), not LinkConfig's uplink values."""
    from netfl.config.radio import LinkConfig, LteRadioConfig

    downlink, uplink = LteRadioConfig().downlink, LinkConfig()
    assert downlink.tx_power_dbm != uplink.tx_power_dbm  # else this test shows nothing
    text = render()
    down = _rows(text, "`radio.downlink`")
    up = _rows(text, "`radio.uplink`")
    assert down["tx_power_dbm"][2] == f"`{downlink.tx_power_dbm}`"
    assert down["noise_figure_db"][2] == f"`{downlink.noise_figure_db}`"
    assert up["tx_power_dbm"][2] == f"`{uplink.tx_power_dbm}`"


def test_headings_name_the_variant_and_are_unique():
    text = render()
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert len(headings) == len(set(headings))
    assert "## `radio` (model: `lte`)" in headings
    assert "## `radio` (model: `fixed`)" in headings
    # partition has one section whose kind takes several values: no variant in its title
    assert "## `learning.partition`" in headings


def test_a_variant_tag_is_required_exactly_where_the_loader_needs_it():
    """The default column of a union's tag says *required* where a mapping without the tag
    is refused, and shows the value where the loader picks that variant on its own."""
    from netfl.errors import ScenarioError
    from netfl.scenario import scenario_from_data

    text = render()
    assert _rows(text, "`radio` (model: `lte`)")["model"][2] == '`"lte"`'
    assert _rows(text, "`radio` (model: `fixed`)")["model"][2] == "required"
    assert scenario_from_data({"radio": {}}).radio.model == "lte"
    kind = _rows(text, "`radio.rate_mapping` (kind: `shannon`)")["kind"]
    assert kind[2] == "required"
    with pytest.raises(ScenarioError):
        scenario_from_data({"radio": {"rate_mapping": {}}})
    # The section's own default names the variant in force.
    assert _rows(text, "`radio` (model: `lte`)")["rate_mapping"][2] == "`kind: lte_tbs`"


def test_papers_are_cited_by_authors_not_by_seed_file_names():
    """Issue 18: users do not have the seed files (000_<hash>.txt ... 004_<hash>.txt); code
    and docs cite the papers by the keys of docs/references.md."""
    import re

    seed_file = re.compile(r"\b00[0-4]_[0-9a-f]{16}")
    short = re.compile(r"(?<![\w.,\-/])00[0-4](?=\s+(eqs?|Sec|Figs?|Table|Algorithm)\b)")
    found = []
    for folder in ("netfl", "channel_models", "docs", "scenarios"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix not in {".py", ".md", ".yaml", ".txt"}:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if seed_file.search(line) or short.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert not seed_file.search(readme)
    assert found == []
