"""Task kinds as strategies (``medbench.kinds``): the lookup, one alignment, the resampling unit.

A score kind without a cluster column resamples items; the reference here is the obvious slow
computation (draw item indices with ``default_rng(seed).integers(0, N, size=(R, N))``, score each
resample with scikit-learn), not the module's own cluster machinery.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sklearn.metrics import roc_auc_score

from medbench.kind import ComparisonError, align, read_aligned, resampling_unit
from medbench.kinds import kind, kinds
from medbench.stats.paired_auroc import paired_auroc_difference
from medbench.stats.ranks import auroc_rank_intervals
from support.plugins import builtin_plugins
from support.paths import REPO
from support.pvalues import reference_p


def _windows(seed: int, n: int, clusters: int):
    rng = np.random.default_rng(seed)
    cluster = rng.integers(0, clusters, size=n).astype(np.int32)
    y = (rng.random(n) < 0.3).astype(np.int8)
    a = y * 1.5 + rng.normal(size=n)
    b = y * 0.5 + rng.normal(size=n)
    return a, b, y, cluster


def _loop_items(a, b, y, replicates: int, seed: int) -> tuple[float, float, float, int]:
    """Paired item bootstrap of AUROC(a) - AUROC(b), exactly as documented, by brute force."""
    draws = np.random.default_rng(seed).integers(0, len(y), size=(replicates, len(y)))
    diffs = []
    for rows in draws:
        if len(set(y[rows].tolist())) < 2:
            continue
        diffs.append(roc_auc_score(y[rows], a[rows]) - roc_auc_score(y[rows], b[rows]))
    d = np.asarray(diffs)
    low, high = np.percentile(d, [2.5, 97.5])
    p = reference_p(d)[0]  # the percentile interval inverted, by bisection on np.percentile
    return float(low), float(high), float(p), replicates - len(d)


def test_lookup_knows_the_builtins_and_lists_them_on_a_miss() -> None:
    assert set(kinds()) >= {"choice", "score"}
    assert kind("score").name == "score" and kind("choice").name == "choice"
    with pytest.raises(KeyError, match=r"unknown task kind 'ranking'; known: choice, rubric, score"):
        kind("ranking")


def test_a_score_kind_without_cluster_column_resamples_items() -> None:
    a, b, y, _ = _windows(3, 120, 10)
    cols = {"score": a, "label": y}, {"score": b, "label": y}
    c = kind("score").compare(*cols, None, replicates=150, seed=11)
    low, high, p, dropped = _loop_items(a, b, y, 150, 11)
    assert (c.ci_low, c.ci_high, c.p_value, c.dropped_replicates) == pytest.approx((low, high, p, dropped), abs=1e-12)
    assert c.difference == pytest.approx(roc_auc_score(y, a) - roc_auc_score(y, b), abs=1e-12)
    assert "over 120 items" in c.method
    d = kind("score").baseline_difference(*cols, None, replicates=150, seed=11)
    assert (d.ci_low, d.ci_high, d.p_value) == pytest.approx((low, high, p), abs=1e-12)


def test_a_score_kind_with_a_cluster_column_resamples_its_values() -> None:
    a, b, y, cluster = _windows(4, 200, 12)
    cols = [{"score": s, "label": y, "patient_id": cluster} for s in (a, b)]
    c = kind("score").compare(*cols, "patient_id", replicates=100, seed=2)
    want = paired_auroc_difference(a, b, y, cluster, 100, 2)
    assert (c.ci_low, c.ci_high, c.p_value) == (want.ci_low, want.ci_high, want.p_value)
    assert f"over {len(np.unique(cluster))} patients" in c.method
    items = kind("score").compare(*cols, None, replicates=100, seed=2)
    assert (items.ci_low, items.ci_high) != (c.ci_low, c.ci_high)  # the unit matters
    other = dict(cols[1], patient_id=cluster[::-1].copy())
    with pytest.raises(ComparisonError, match="cluster"):
        kind("score").compare(cols[0], other, "patient_id", replicates=10, seed=0)


def test_score_rank_intervals_use_the_same_unit() -> None:
    a, b, y, cluster = _windows(5, 150, 9)
    aligned = [{"score": s, "label": y, "patient_id": cluster} for s in (a, b, (a + b) / 2)]
    point = np.arange(1, 4)
    by_item = kind("score").rank_intervals(aligned, None, 80, 3)
    want = auroc_rank_intervals(np.stack([a, b, (a + b) / 2]), y, np.arange(len(y)), 80, 3, point)
    assert by_item.n_items == 150 and "over items" in by_item.method
    assert np.array_equal(by_item.intervals.rank_low, want.rank_low)
    assert np.array_equal(by_item.intervals.diff_low, want.diff_low)
    by_cluster = kind("score").rank_intervals(aligned, "patient_id", 80, 3)
    want = auroc_rank_intervals(np.stack([a, b, (a + b) / 2]), y, cluster, 80, 3, point)
    assert np.array_equal(by_cluster.intervals.diff_high, want.diff_high) and "over patients" in by_cluster.method


def test_choice_resamples_items_and_refuses_a_cluster_column() -> None:
    y = np.array(["A", "B", "C", "A"])
    a = {"correct": np.array([True, True, False, True]), "label": y}
    b = {"correct": np.array([False, True, False, False]), "label": y}
    c = kind("choice").compare(a, b, None, 10, 0)
    assert (c.a_only_correct, c.b_only_correct, c.difference) == (2, 0, 0.5)
    assert kind("choice").baseline_difference(a, b, None, 10, 0).difference == 0.5
    with pytest.raises(ValueError, match="cluster_column = None"):
        kind("choice").rank_intervals([a, b], "patient_id", 10, 0)


def test_alignment_is_the_sorted_intersection_whatever_the_file_order(tmp_path: Path) -> None:
    paths = []
    for name, ids in (("a", ["q3", "q1", "q2", "q9"]), ("b", ["q2", "q3", "q4", "q1"]), ("c", ["q1", "q2", "q3"])):
        paths.append(tmp_path / f"{name}.parquet")
        pq.write_table(pa.table({"instance_id": ids, "v": [f"{name}{i}" for i in ids]}), paths[-1])
    aligned, sizes = read_aligned(paths, ["v"])
    assert sizes == [4, 4, 3]
    assert [list(c["v"]) for c in aligned] == [["aq1", "aq2", "aq3"], ["bq1", "bq2", "bq3"], ["cq1", "cq2", "cq3"]]
    two = align([pq.read_table(p) for p in paths[:2]], ["v"])
    assert list(two[1]["v"]) == ["bq1", "bq2", "bq3"]


def test_resampling_unit_names() -> None:
    assert [resampling_unit(c) for c in (None, "subjectid", "patient_id", "site")] == \
        ["items", "subjects", "patients", "sites"]


@pytest.mark.parametrize("name", builtin_plugins().families.names())
def test_every_family_declares_its_cluster_column_and_extends_its_kinds_schema(name: str) -> None:
    fam = builtin_plugins().families.get(name)
    schema = kind(fam.kind).schema
    assert fam.cluster_column is None or fam.cluster_column in fam.predictions_schema.names
    assert fam.predictions_schema.names[: len(schema)] == schema.names
    assert all(fam.predictions_schema.field(f.name).type == f.type for f in schema)


def test_the_kind_protocol_imports_nothing_of_the_project() -> None:
    tree = ast.parse((REPO / "medbench" / "kind.py").read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported <= {"__future__", "collections", "dataclasses", "pathlib", "typing", "numpy", "pyarrow", "msgspec"}


def test_a_plugin_kind_under_a_builtin_name_is_an_error_naming_both(monkeypatch) -> None:
    """Kinds live in a Registry: a second ``score`` (from an installed distribution) does not silently lose."""
    from importlib.metadata import EntryPoint

    import medbench.kinds as kinds_module

    clash = EntryPoint(name="score", value="somewhere.kinds:OtherScore", group="medbench.kinds")
    monkeypatch.setattr(kinds_module, "entry_points", lambda group: [clash] if group == "medbench.kinds" else [])
    monkeypatch.setattr(kinds_module, "_registry", None)
    with pytest.raises(ValueError, match=r"task kind 'score' is registered twice: by medbench\.kinds\.score\.Score "
                                         r"and by entry point 'somewhere\.kinds:OtherScore'"):
        kinds_module.kind("score")
    monkeypatch.setattr(kinds_module, "_registry", None)
