"""The first schema of the submissions store: tokens, submissions and their state history.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tokens",
        sa.Column("id", sa.String(12), primary_key=True),
        sa.Column("owner", sa.String(200), nullable=False),
        sa.Column("scopes", sa.String(200), nullable=False),
        sa.Column("secret_sha256", sa.String(64), nullable=False, unique=True),
        sa.Column("note", sa.Text, nullable=False, server_default=""),
        sa.Column("created_at", sa.Double, nullable=False),
        sa.Column("expires_at", sa.Double, nullable=True),
        sa.Column("last_used_at", sa.Double, nullable=True),
        sa.Column("revoked_at", sa.Double, nullable=True),
        sa.Column("window_start", sa.Double, nullable=True),
        sa.Column("window_count", sa.Integer, nullable=False, server_default="0"),
    )
    op.create_table(
        "submissions",
        sa.Column("id", sa.String(12), primary_key=True),
        sa.Column("owner", sa.String(200), nullable=False),
        sa.Column("token_id", sa.String(12), nullable=True),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("state_reason", sa.Text, nullable=True),
        sa.Column("tier", sa.String(16), nullable=False),
        sa.Column("slug", sa.String(200), nullable=False),
        sa.Column("provider_model_id", sa.String(200), nullable=False),
        sa.Column("model", sa.Text, nullable=False),
        sa.Column("tasks", sa.Text, nullable=False),
        sa.Column("model_spec_hash", sa.String(64), nullable=False),
        sa.Column("package_sha256", sa.String(64), nullable=True),
        sa.Column("resources", sa.Text, nullable=True),
        sa.Column("run_ids", sa.Text, nullable=False, server_default="[]"),
        sa.Column("open_key", sa.String(64), nullable=True, unique=True),
        sa.Column("created_at", sa.Double, nullable=False),
        sa.Column("updated_at", sa.Double, nullable=False),
    )
    op.create_index("ix_submissions_owner", "submissions", ["owner"])
    op.create_index("ix_submissions_state", "submissions", ["state"])
    op.create_index("ix_submissions_owner_created", "submissions", ["owner", "created_at"])
    op.create_index("ix_submissions_slug", "submissions", ["slug"])
    op.create_index("ix_submissions_provider_model_id", "submissions", ["provider_model_id"])
    op.create_table(
        "submission_history",
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("submission_id", sa.String(12), sa.ForeignKey("submissions.id"), nullable=False),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("at", sa.Double, nullable=False),
        sa.Column("reason", sa.Text, nullable=True),
    )
    op.create_index("ix_submission_history_submission_id", "submission_history", ["submission_id"])


def downgrade() -> None:
    op.drop_table("submission_history")
    op.drop_table("submissions")
    op.drop_table("tokens")
