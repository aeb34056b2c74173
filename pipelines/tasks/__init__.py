"""One folder per task family behind the ``TaskFamily`` protocol (``base.py``), each registered in the
entry-point group ``medbench.families`` (``pyproject.toml``)."""
