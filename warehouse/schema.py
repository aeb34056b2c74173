"""The published tables, as analysts see them (documented column by column in the README)."""

CREATE_TABLES = [
    "CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
    """CREATE TABLE datasets (
        slug VARCHAR PRIMARY KEY, name VARCHAR, license VARCHAR, license_url VARCHAR, citation VARCHAR,
        doi VARCHAR, public_since DATE, description VARCHAR, source JSON, snapshot_id VARCHAR)""",
    """CREATE TABLE tasks (
        slug VARCHAR, version INTEGER, ref VARCHAR PRIMARY KEY, dataset VARCHAR, kind VARCHAR, title VARCHAR,
        primary_metric VARCHAR, preview BOOLEAN, spec_hash VARCHAR, spec JSON, description VARCHAR)""",
    """CREATE TABLE models (
        slug VARCHAR PRIMARY KEY, name VARCHAR, type VARCHAR, provider VARCHAR, provider_model_id VARCHAR,
        revision VARCHAR, release_date DATE, knowledge_cutoff DATE, backend VARCHAR, description VARCHAR,
        spec_hash VARCHAR, spec JSON)""",
    """CREATE TABLE results (
        run_id VARCHAR PRIMARY KEY, task VARCHAR, task_slug VARCHAR, task_version INTEGER, dataset VARCHAR,
        model_slug VARCHAR, model_type VARCHAR, tier VARCHAR, demo BOOLEAN,
        metric_name VARCHAR, metric_value DOUBLE, ci_low DOUBLE, ci_high DOUBLE,
        n INTEGER, parse_rate DOUBLE, cost_usd DOUBLE, eval_date DATE, created_at TIMESTAMPTZ,
        contamination BOOLEAN, superseded_by VARCHAR, dataset_snapshot VARCHAR, task_spec_hash VARCHAR,
        model_spec_hash VARCHAR, parser VARCHAR, code_revision VARCHAR, price_table_date DATE,
        predictions_sha256 VARCHAR, record JSON)""",
    """CREATE TABLE metrics (
        run_id VARCHAR, ordinal INTEGER, name VARCHAR, value DOUBLE, ci_low DOUBLE, ci_high DOUBLE,
        PRIMARY KEY (run_id, name))""",
]

# Columns of the predictions view when no Parquet file exists yet (union of both task kinds).
PREDICTION_COLUMNS = [
    ("run_id", "VARCHAR"),
    ("instance_id", "VARCHAR"),
    ("prediction", "VARCHAR"),
    ("label", "VARCHAR"),
    ("correct", "BOOLEAN"),
    ("parse_status", "VARCHAR"),
    ("raw_output", "VARCHAR"),
    ("score", "DOUBLE"),
    ("caseid", "INTEGER"),
    ("subjectid", "INTEGER"),
    ("t", "INTEGER"),
]
