"""The store's schema, as SQLAlchemy Core tables: one definition for SQLite and PostgreSQL.

The migrations (``migrations/versions``) create exactly these tables; a test compares the migrated
database with this metadata, so the two cannot drift. Times are epoch seconds (double precision):
they compare and sort alike on both engines, and the records render them as UTC ISO-8601.

Its file name is shared on purpose: each store package has its own records, store and tables
modules, named alike.
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

tokens = sa.Table(
    "tokens", metadata,
    sa.Column("id", sa.String(12), primary_key=True),
    sa.Column("owner", sa.String(200), nullable=False),
    sa.Column("scopes", sa.String(200), nullable=False),  # comma-separated
    sa.Column("secret_sha256", sa.String(64), nullable=False, unique=True),
    sa.Column("note", sa.Text, nullable=False, server_default=""),
    sa.Column("created_at", sa.Double, nullable=False),
    sa.Column("expires_at", sa.Double, nullable=True),
    sa.Column("last_used_at", sa.Double, nullable=True),
    sa.Column("revoked_at", sa.Double, nullable=True),
    # the per-token rate limit's fixed window, kept here so that every server process shares it
    sa.Column("window_start", sa.Double, nullable=True),
    sa.Column("window_count", sa.Integer, nullable=False, server_default="0"),
)

submissions = sa.Table(
    "submissions", metadata,
    sa.Column("id", sa.String(12), primary_key=True),
    sa.Column("owner", sa.String(200), nullable=False, index=True),
    sa.Column("token_id", sa.String(12), nullable=True),  # which token submitted (never its secret)
    sa.Column("state", sa.String(32), nullable=False, index=True),
    sa.Column("state_reason", sa.Text, nullable=True),
    sa.Column("tier", sa.String(16), nullable=False),
    sa.Column("slug", sa.String(200), nullable=False, index=True),  # model.slug, for identity checks
    sa.Column("provider_model_id", sa.String(200), nullable=False, index=True),
    sa.Column("model", sa.Text, nullable=False),  # JSON
    sa.Column("tasks", sa.Text, nullable=False),  # JSON list
    sa.Column("model_spec_hash", sa.String(64), nullable=False),
    sa.Column("package_sha256", sa.String(64), nullable=True),
    sa.Column("resources", sa.Text, nullable=True),  # JSON
    sa.Column("run_ids", sa.Text, nullable=False, server_default="[]"),  # JSON list
    # sha256(model spec hash, tasks, tier) while the submission is open, NULL once it ends: the unique
    # index makes a second open submission of the same request impossible, on either engine
    sa.Column("open_key", sa.String(64), nullable=True, unique=True),
    sa.Column("created_at", sa.Double, nullable=False),
    sa.Column("updated_at", sa.Double, nullable=False),
    sa.Index("ix_submissions_owner_created", "owner", "created_at"),
)

history = sa.Table(
    "submission_history", metadata,
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("submission_id", sa.String(12), sa.ForeignKey("submissions.id"), nullable=False, index=True),
    sa.Column("state", sa.String(32), nullable=False),
    sa.Column("at", sa.Double, nullable=False),
    sa.Column("reason", sa.Text, nullable=True),
)
