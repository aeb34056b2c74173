"""medbench-potassium: a plug-in distribution for medbench with a new warehouse kind (regression),
a FHIR R4 NDJSON dataset (fhirward), the task family potassium-next and the forecast backend.

The worked example of docs/adding-a-task.md ("A new kind"): nothing in medbench names any of them.
"""

from pathlib import Path


def specs_dir() -> Path:
    """The distribution's spec files, laid out like medbench's ``specs/`` (entry point ``medbench.specs``)."""
    return Path(__file__).with_name("specs")
