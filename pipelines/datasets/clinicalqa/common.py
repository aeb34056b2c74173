"""What the ClinicalQA dataset, its loader and its Hub client share: the source variable and the errors.

Why its own module: each of the three names these, so defining them in any one of the three made
the other two import it back (a loop kept alive by imports inside functions).
"""

from __future__ import annotations

CLINICALQA_SOURCE_ENV = "MEDBENCH_CLINICALQA_SOURCE"


class ClinicalqaDataError(ValueError):
    """The source rows do not form a valid ClinicalQA table; the message names rows and fields."""


class ClinicalqaDownloadError(RuntimeError):
    """The Hub could not be listed or downloaded from (after retries); says how to use a local copy."""
