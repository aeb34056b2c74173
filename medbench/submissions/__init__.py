"""The write path's store: API tokens and model submissions, a database of its own beside the
published warehouse (SQLite in WAL mode in the data directory by default, PostgreSQL in deployments),
behind one interface and one Alembic-migrated schema. The API, the CLI and the Dagster sensor all
reach it through ``SubmissionStore``; nothing here touches the published DuckDB warehouse."""

from medbench.submissions.engine import URL_ENV, store_url
from medbench.submissions.records import (
    STATES,
    TERMINAL,
    TRANSITIONS,
    AuthFailure,
    HistoryEntry,
    IllegalTransition,
    QuotaExceeded,
    Resources,
    StoreError,
    Submission,
    SubmissionNotFound,
    SubmissionRefused,
    Checked,
    Token,
    TokenNotFound,
)
from medbench.submissions.store import Created, SubmissionStore, dedupe_key

__all__ = [
    "STATES", "TERMINAL", "TRANSITIONS", "URL_ENV", "AuthFailure", "Checked", "Created", "HistoryEntry", "IllegalTransition",
    "QuotaExceeded", "Resources", "StoreError", "Submission", "SubmissionNotFound", "SubmissionRefused", "SubmissionStore", "Token",
    "TokenNotFound", "dedupe_key", "store_url",
]
