"""The documentation as a site and the project's files for reuse (issue 25, items 4 and 5):
the MkDocs site builds in strict mode, every key the docs name exists, CITATION.cff is
valid, the licence is the one setup.cfg declares, the changelog is linked."""

from __future__ import annotations

import configparser
import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ("cell", "radio", "devices", "traffic", "fl", "selection", "learning", "output")


def _build(config_file: Path, site: Path) -> None:
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    build(load_config(str(config_file), site_dir=str(site), strict=True))


def test_the_site_builds_in_strict_mode_with_the_generated_references(tmp_path):
    _build(ROOT / "mkdocs.yml", tmp_path / "site")
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    pages = set(re.findall(r"[\w/]+\.md", json.dumps(nav)))
    assert {"scenario.md", "strategies.md", "features.md", "limits.md", "extending.md"} <= pages
    documented = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").glob("*.md")}
    assert documented == pages, "every page of docs/ is in the nav, and every nav page exists"
    assert (tmp_path / "site" / "scenario" / "index.html").is_file()


@pytest.mark.parametrize(
    ("page", "problem"),
    [
        ("See [the radio](radio-model.md).\n", "not found among documentation files"),
        ("See [a section](index.md#no-such-heading).\n", "no-such-heading"),
    ],
)
def test_a_broken_link_or_anchor_fails_the_build(tmp_path, page, problem, caplog):
    """The same configuration on a copy with one bad link: strict mode refuses it."""
    from mkdocs.exceptions import Abort

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\n" + page)
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    config["nav"] = [{"Home": "index.md"}]
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    with pytest.raises(Abort):
        _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert problem in caplog.text


def _schema_keys() -> tuple[set[str], set[str]]:
    """Every key of docs/scenario.md as generated from the schema (``section.key``, list
    items as ``[]``), and the keys that hold a free mapping (``selection.params``)."""
    from netfl.config.docs import render

    keys, mappings, section = set(), set(), None
    for line in render().splitlines():
        if line.startswith("## "):
            found = re.match(r"## `([^`]+)`", line)
            section = found.group(1) if found else ("" if line == "## top level" else None)
            if section:
                keys.add(section)
        elif line.startswith("| `") and section is not None:
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            key = f"{section}.{cells[0].strip('`')}" if section else cells[0].strip("`")
            keys.add(key)
            if cells[1] == "mapping":
                mappings.add(key)
    return keys, mappings


def _stream_names() -> list[re.Pattern[str]]:
    """The random streams the code draws from (``streams.get("radio.drop")``): docs name
    them in the same dotted style as keys."""
    names = set()
    for path in (ROOT / "netfl").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        names |= set(re.findall(r'(?:get|seed_sequence|torch_seed)\(f?"([\w.{}]+)"', text))
    return [re.compile(re.sub(r"\\\{\w+\\\}", r"\\w+", re.escape(n)) + "$") for n in names]


def test_every_scenario_key_the_docs_name_exists():
    """A dotted key in docs/ or the README (``fl.deadline_s``, ``devices.groups.0.count``)
    must be a key of the schema (or a random stream's name); a misnamed one (issue 25:
    ``learning.contexts``) fails here."""
    keys, mappings = _schema_keys()
    streams = _stream_names()
    token = re.compile(rf"(?<![\w./\-])({'|'.join(SECTIONS)})((?:\.(?:[A-Za-z_]\w*|\d+)|\[\])+)")
    unknown = []
    for path in [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in token.finditer(line):
                name = match.group(0)
                if re.search(r"\.(md|py|yaml|png|csv|parquet|json|html)$", name):
                    continue  # a file
                key = re.sub(r"\.(\d+|N)(?=\.|$)", "[]", name)
                if key in keys or any(key.startswith(m + ".") for m in mappings):
                    continue
                if line[match.end() : match.end() + 1] == "*" and any(
                    k.startswith(key) for k in keys
                ):
                    continue  # a family of keys: cell.antenna_*
                if any(stream.match(name) for stream in streams):
                    continue
                unknown.append(f"{path.relative_to(ROOT)}:{number}: {name}")
    assert unknown == []


def test_citation_file_is_valid_cff_and_names_this_version_and_licence():
    """CITATION.cff against the Citation File Format 1.2.0 JSON schema
    (tests/data/cff-1.2.0.schema.json, https://citation-file-format.github.io/1.2.0/schema.json,
    CC-BY-4.0, as shipped by cffconvert 2.0.0)."""
    import jsonschema

    from netfl._version import __version__

    schema = json.loads((ROOT / "tests" / "data" / "cff-1.2.0.schema.json").read_text())
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    jsonschema.validate(citation, schema, format_checker=jsonschema.FormatChecker())
    assert citation["version"] == __version__
    assert citation["license"] == _declared_licence()
    broken = {key: value for key, value in citation.items() if key != "authors"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)  # the schema does refuse a file without authors


def _declared_licence() -> str:
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    return parser["metadata"]["license"]


def test_the_licence_is_the_osi_approved_one_setup_cfg_declares():
    assert _declared_licence() == "MIT"
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n")
    assert "Permission is hereby granted, free of charge" in text  # the OSI MIT text


def test_the_readme_links_the_changelog_licence_and_citation():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for target in (
        "CHANGELOG.md",
        "LICENSE",
        "CITATION.cff",
        "docs/limits.md",
        "docs/extending.md",
    ):
        assert f"]({target})" in readme, target
        assert (ROOT / target).is_file()
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    from netfl._version import __version__

    assert f"## {__version__} " in changelog
