"""docs/limits.md: every refusal of something netfl does not model points there, and the
page lists what is not modelled today (issue 25, item 4)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from netfl.cli import main
from netfl.errors import LIMITS_PAGE, NOT_MODELLED, Problem

ROOT = Path(__file__).resolve().parents[1]

#: Phrasings of "netfl does not do this": wider than NOT_MODELLED on purpose, so that a
#: new refusal worded another way fails here until NOT_MODELLED (and so the pointer to
#: the page) covers it.
REFUSAL_WORDS = re.compile(
    r"not (yet )?(supported|modell?ed|implemented)|unsupported|does not (support|model)"
    r"|(cannot|can't|does not) (model|simulate)|no support for|for now|not (yet )?available in"
    r"|is not possible (with|on)",
    re.IGNORECASE,
)


def _message_strings(path: Path) -> list[tuple[int, str]]:
    """The string literals of a module that are not docstrings (f-strings joined)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
            found.append((node.lineno, text))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            found.append((node.lineno, node.value))
    return found


def test_every_refusal_of_something_not_modelled_gets_the_pointer():
    """Scans every message string in netfl/ and channel_models/: one that says netfl does
    not do something must be worded so that its Problem points to the limits page."""
    missed = []
    for folder in ("netfl", "channel_models"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for line, text in _message_strings(path):
                if REFUSAL_WORDS.search(text) and not NOT_MODELLED.search(text):
                    missed.append(f"{path.relative_to(ROOT)}:{line}: {text!r}")
    assert missed == [], "word these as NOT_MODELLED does, or widen it (netfl/errors.py)"


def test_a_problem_saying_so_points_to_the_page_once():
    problem = Problem("radio.model", "nr supports a single cell for now; use model: lte")
    assert problem.message.endswith(f"{LIMITS_PAGE})")
    again = Problem(problem.key, problem.message)
    assert again.message.count(LIMITS_PAGE) == 1
    assert LIMITS_PAGE not in Problem("fl.rounds", "must be positive").message


@pytest.mark.parametrize(
    ("scenario", "overrides", "key"),
    [
        ("compare_selection", ["fl.protocol=fedbuff", "selection={name: pow_d}"], "selection.name"),
    ],
)
def test_the_refusals_of_today_point_to_the_page(scenario, overrides, key, capsys):
    args = [a for o in overrides for a in ("--set", o)]
    assert main(["validate", scenario, *args]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if f"{key}:" in line]
    assert errors and all(line.endswith(f"{LIMITS_PAGE})") for line in errors)


def test_the_page_lists_today_s_limits_and_the_readme_links_it():
    page = (ROOT / LIMITS_PAGE).read_text(encoding="utf-8")
    headings = [line[3:] for line in page.splitlines() if line.startswith("## ")]
    for subject in ("Mobility: what moving devices leave out", "Aggregation rules: what"):
        assert any(h.startswith(subject) for h in headings), subject
    for heading in headings:  # every entry says what is missing and the nearest thing
        section = page.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
        assert "**Not modelled:**" in section and "**Nearest:**" in section, heading
    assert "(docs/limits.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
