"""Alembic's environment for the submissions store: always driven by medbench.submissions.migrate,
which hands it an open connection (never a URL from a file), so it runs alike on SQLite and PostgreSQL."""

from alembic import context

from medbench.submissions.tables import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
