"""docs/concepts.md's drawing of the layers and import-linter's layers contract name the same packages
in the same order: the drawing is what a reader trusts, the contract is what `lint-imports` checks,
so neither may change alone (docs/concepts.md, "The layers")."""

from __future__ import annotations

import re
import tomllib

from support.paths import REPO

CONTRACT = "the layers of the house: pipelines > api > warehouse > medbench"


def drawn_layers(markdown: str) -> list[str]:
    """The packages of the first code block under "### The layers", top to bottom: each line that
    starts with a name (the arrows between them start with spaces)."""
    section = markdown.split("### The layers\n", 1)[1]
    block = re.search(r"```\n(.*?)```", section, re.S)
    assert block, 'docs/concepts.md: no drawing (a ``` block) under "### The layers"'
    return [m.group(1) for line in block.group(1).splitlines() if (m := re.match(r"([a-z_]+)\s", line))]


def contract_layers(pyproject: str) -> list[str]:
    contracts = tomllib.loads(pyproject)["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c["name"] == CONTRACT]
    assert contract["type"] == "layers"
    return contract["layers"]


def test_the_drawing_and_the_contract_name_the_same_layers() -> None:
    drawn = drawn_layers((REPO / "docs" / "concepts.md").read_text())
    assert drawn == contract_layers((REPO / "pyproject.toml").read_text())
    assert drawn == ["pipelines", "api", "warehouse", "medbench"]


def test_every_layer_is_a_root_package_of_the_contracts() -> None:
    roots = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["root_packages"]
    assert sorted(roots) == sorted(contract_layers((REPO / "pyproject.toml").read_text()))


def test_the_parser_sees_a_reordered_drawing() -> None:
    drawing = "### The layers\n\n```\napi   x\n  |\n  v\npipelines   y\n```\n"
    assert drawn_layers(drawing) == ["api", "pipelines"]
