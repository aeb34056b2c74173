"""The official tier: a submitted package (its authors' code) checked at the door, installed and
run in medbench's sandbox, and scored by the task's own scorer (docs/official-tier.md).

A package of the project like any other, so the import contracts of ``pyproject.toml`` cover it:
it sits beside the task families and datasets, above the engine, and imports no Dagster and no CLI.
"""
