"""Asset checks made from a family's check verdicts (``CheckOutcome``), one ``@asset_check`` each.

Why separate ``@asset_check`` functions (not results emitted by the asset): each reads the stored
files again, so it can be re-run alone from the UI (the asset's *Checks* tab, *Execute*) after a
file was repaired or a threshold changed, without re-materializing the asset. Checks on a
partitioned asset are partitioned the same way, so a re-run judges one evaluation; Dagster marks
partitioned checks as a preview feature, hence the narrow warning filter around their creation.
(No ``from __future__ import annotations`` here: Dagster reads the ``context`` annotation at runtime.)
"""


import warnings
from collections.abc import Callable

import dagster as dg

from pipelines.dagster.resources import MedbenchResource
from pipelines.tasks.base import CheckOutcome

from .metadata import typed

# Verdicts of every check on an asset, from the stored files: (context, medbench) -> outcomes.
Outcomes = Callable[[dg.AssetCheckExecutionContext, MedbenchResource], list[CheckOutcome]]


def _severity_and_metadata(outcome: CheckOutcome) -> tuple[dg.AssetCheckSeverity, dict]:
    severity = dg.AssetCheckSeverity.WARN if outcome.severity == "warn" else dg.AssetCheckSeverity.ERROR
    meta = typed(outcome.metadata)
    if outcome.description:
        meta["verdict"] = dg.MetadataValue.text(outcome.description)
    return severity, meta


def result(outcome: CheckOutcome) -> dg.AssetCheckResult:
    severity, meta = _severity_and_metadata(outcome)
    return dg.AssetCheckResult(passed=outcome.passed, severity=severity, metadata=meta)


def missing_verdict(name: str) -> CheckOutcome:
    """A declared check the family returned no verdict for fails (it never passes by not running)."""
    return CheckOutcome(name, False, f"the task family returned no verdict named {name!r}")


def evaluation(key: dg.AssetCheckKey, outcome: CheckOutcome | None, partition: str | None,
               target=None) -> dg.AssetCheckEvaluation:
    """The same verdict as an evaluation event for one partition, for a record made outside the
    check's own step (a ranged run, the CLI's skips); ``target``: the materialization it judged."""
    outcome = outcome or missing_verdict(key.name)
    severity, meta = _severity_and_metadata(outcome)
    return dg.AssetCheckEvaluation(asset_key=key.asset_key, check_name=key.name, passed=outcome.passed,
                                   severity=severity,
                                   metadata=meta, partition=partition, target_materialization_data=target)


def outcome_check(asset: dg.AssetsDefinition, name: str, description: str, outcomes: Outcomes,
                  partitions_def: dg.PartitionsDefinition | None = None) -> dg.AssetChecksDefinition:
    """One check named ``name`` on ``asset``: the outcome of that name among ``outcomes``' verdicts.

    A verdict missing from the family's list fails the check (a declared check never passes by
    not running).
    """

    def check(context: dg.AssetCheckExecutionContext, medbench: MedbenchResource) -> dg.AssetCheckResult:
        for outcome in outcomes(context, medbench):
            if outcome.name == name:
                return result(outcome)
        return result(missing_verdict(name))

    check.__name__ = name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=dg.PreviewWarning)  # partitioned checks (see above)
        return dg.asset_check(asset=asset, name=name, description=description,
                              partitions_def=partitions_def)(check)


def merge(per_task: dict[str, list[CheckOutcome]]) -> list[CheckOutcome]:
    """One verdict per check name over a family's task versions (``{task ref: outcomes}``): passed
    only if every version passed; metadata keyed ``<ref> <key>`` so each version's numbers show."""
    merged: dict[str, CheckOutcome] = {}
    for ref, outcomes in per_task.items():
        for o in outcomes:
            meta = {f"{ref} {k}": v for k, v in o.metadata.items()}
            desc = f"{ref}: {o.description}" if o.description else ""
            prev = merged.get(o.name)
            if prev is not None:
                meta = {**prev.metadata, **meta}
                desc = "; ".join(d for d in (prev.description, desc) if d)
            severity = "error" if o.severity == "error" or (prev and prev.severity == "error") else "warn"
            merged[o.name] = CheckOutcome(o.name, o.passed and (prev is None or prev.passed), desc, meta, severity)
    return list(merged.values())
