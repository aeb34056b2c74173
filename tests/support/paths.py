"""Where things are, wherever a test module sits in the tree (tests/unit/..., tests/contract, ...)."""

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
SHARED = REPO.parent / "shared"          # laid beside the checkout, for developers and CI
SAMPLES = SHARED / "samples"
SUPPORT = TESTS / "support"
