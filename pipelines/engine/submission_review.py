"""A maintainer's decision on a submission awaiting approval: approve (-> queued) or reject, with a
reason its owner reads in the submission's history. One function for both ways of deciding:
``medbench submissions approve|reject`` and the Dagster job ``review_submission``."""

from __future__ import annotations

from medbench.submissions import Submission, SubmissionStore

DECISIONS = ("approve", "reject")


def review(store: SubmissionStore, submission_id: str, decision: str, reason: str) -> Submission:
    """Raises ValueError (no reason, unknown decision), SubmissionNotFound or IllegalTransition (one line each)."""
    reason = " ".join(str(reason).split())  # one line, whatever was typed
    if not reason:
        raise ValueError("give a reason: the submission's owner reads it in its history")
    if decision == "approve":
        return store.transition(submission_id, "queued", f"approved: {reason}")
    if decision == "reject":
        return store.transition(submission_id, "rejected", reason)
    raise ValueError(f"decision {decision!r}: one of {', '.join(DECISIONS)}")
