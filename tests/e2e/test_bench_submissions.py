"""bench/submissions keeps working at its smoke size (80 submissions from 10 tokens at once against
``medbench serve --workers 2``): its correctness checks must hold; its speeds are only printed."""

from __future__ import annotations

import re

import pytest

from bench import submissions

pytestmark = pytest.mark.slow


def test_smoke_run_keeps_every_quota_and_transition(capsys: pytest.CaptureFixture[str]) -> None:
    assert submissions.main(["--smoke"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("submissions: 80 requests from 10 tokens (8 each, a quarter repeats), quota 3 per owner")
    assert re.search(r"^answers: \{200: \d+, 201: 30, 429: \d+\}; stored 30$", out, re.M), out
    assert re.search(r"^one at a time: \d+ requests/s; concurrent vs one at a time: [\d.]+x$", out, re.M), out
    assert "checks: no duplicate submission, no lost or doubled transition, every quota exact" in out
