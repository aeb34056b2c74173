"""Where everything lives inside one data directory (``MEDBENCH_DATA``).

One place names every path so that the pipeline (writer), the API (reader) and analysts agree.
A data directory holds either demo or real results, never both: which of the two is recorded once
in ``KIND`` and every writer checks it (``demo_or_real()``; "kind" alone means a task kind,
docs/concepts.md, "Glossary").
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

DATA_ENV = "MEDBENCH_DATA"
DEFAULT_DATA_DIR = Path(__file__).resolve().parent.parent / "data"
RUN_ID_RE = re.compile(r"^[0-9a-f]{12}$")


class DemoOrRealError(RuntimeError):
    """Refusal to put demo results into a real data directory, or the reverse."""


# Before one default served every command, ``medbench demo`` wrote to ``data/demo``: a checkout that
# still has one (and nothing in ``data`` itself) keeps using it, with a notice (docs/concepts.md).
_noticed: set[Path] = set()


def data_root() -> Path:
    """``MEDBENCH_DATA``, else ``<checkout>/data`` (the one default, ``medbench demo`` included)."""
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV]).resolve()
    return default_data_dir()


def default_data_dir(default: Path = DEFAULT_DATA_DIR) -> Path:
    """The default directory; an earlier version's ``data/demo`` is found and used, once noticed."""
    earlier = default / "demo"
    if not (default / "KIND").exists() and (earlier / "KIND").exists():
        if earlier not in _noticed:
            _noticed.add(earlier)
            print(f"medbench: using {earlier} (the demo directory of an earlier version); move its contents "
                  f"to {default}, or set {DATA_ENV}, to silence this notice", file=sys.stderr)
        return earlier.resolve()
    return default.resolve()


def where(root: Path, flag: bool = False) -> str:
    """The tail of every "nothing found" message: the directory looked in and how to choose another."""
    how = f"--data DIR or {DATA_ENV}=DIR" if flag else f"{DATA_ENV}=DIR"
    return f"in {root} (choose another with {how})"


class DataDir:
    def __init__(self, root: Path | str | None = None):
        self.root = Path(root).resolve() if root else data_root()

    # -- demo or real -------------------------------------------------------------------
    @property
    def demo_or_real_file(self) -> Path:
        return self.root / "KIND"

    def demo_or_real(self) -> str | None:
        from medbench.files import read_regular

        return read_regular(self.demo_or_real_file).decode().strip() if self.demo_or_real_file.exists() else None

    def claim(self, demo_or_real: str) -> None:
        """Record demo or real on first use; refuse to mix the two afterwards."""
        if demo_or_real not in ("demo", "real"):
            raise ValueError(demo_or_real)
        current = self.demo_or_real()
        if current is None:
            self.root.mkdir(parents=True, exist_ok=True)
            self.demo_or_real_file.write_text(demo_or_real + "\n")
        elif current != demo_or_real:
            raise DemoOrRealError(
                f"{self.root} holds {current} results; refusing to materialize {demo_or_real} results into it. "
                f"Use another data directory (set {DATA_ENV}=/some/other/dir) for {demo_or_real} results."
            )

    # -- inputs -------------------------------------------------------------------------
    @property
    def raw(self) -> Path:
        return self.root / "raw"

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    def snapshots(self, dataset: str) -> Path:
        return self.root / "snapshots" / dataset

    def instances(self, task_ref: str) -> Path:
        return self.root / "instances" / task_ref

    def generations(self, key: str) -> Path:
        return self.root / "generations" / f"{key}.jsonl"

    @property
    def models(self) -> Path:
        return self.root / "models"

    # -- results ------------------------------------------------------------------------
    @property
    def artifacts(self) -> Path:
        return self.root / "artifacts"

    def run_dir(self, run_id: str) -> Path:
        if not RUN_ID_RE.match(run_id):
            raise ValueError(f"not a run id: {run_id!r}")
        return self.artifacts / run_id

    def predictions_path(self, run_id: str) -> Path:
        return self.run_dir(run_id) / "predictions.parquet"

    def result_path(self, run_id: str) -> Path:
        return self.run_dir(run_id) / "result.json"

    @property
    def packages(self) -> Path:
        """Submitted official-tier packages, kept so their results can be reproduced."""
        return self.root / "packages"

    def package_path(self, sha256: str, name: str) -> Path:
        """A kept wheel, by its sha256 (its file name is kept too: pip reads the tags from it)."""
        if not re.fullmatch(r"[0-9a-f]{64}", sha256) or "/" in name or not name.endswith(".whl"):
            raise ValueError(f"not a package: {sha256!r} {name!r}")
        return self.packages / sha256 / name

    # -- published warehouse ----------------------------------------------------------
    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse"

    @property
    def pointer(self) -> Path:
        """Text file naming the current published version (switched with os.replace)."""
        return self.warehouse / "CURRENT"

    @property
    def duckdb_link(self) -> Path:
        """``medbench.duckdb`` for analysts: a symlink to the current version's file."""
        return self.root / "medbench.duckdb"

    def version_file(self, version: str) -> Path:
        return self.warehouse / f"medbench-{version}.duckdb"

    # -- kept for ever, beside the warehouse (pruning version files never touches them) -----
    @property
    def release_log(self) -> Path:
        """The append-only release log (``warehouse.releases``)."""
        return self.root / "releases" / "releases.jsonl"

    @property
    def withdrawal_log(self) -> Path:
        """The append-only record of withdrawn results (``warehouse.withdrawals``)."""
        return self.root / "releases" / "withdrawals.jsonl"

    # -- service state (never inside the warehouse) ------------------------------------
    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def submitted_specs(self) -> Path:
        """Model specs written from approved submissions (``models/<provider>/<name>.toml``): loaded
        with the checkout's specs, never executed, written only by the submissions sensor."""
        return self.root / "submitted-specs"

    @property
    def submissions_db(self) -> Path:
        """The submissions and tokens store (SQLite, WAL) when no PostgreSQL URL is configured."""
        return self.state / "submissions.sqlite3"
