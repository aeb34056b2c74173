"""The composition root of the write path: the ``SubmissionDesk`` that ``medbench serve`` hands the app.

The API imports no engine code; here the engine's validator (the spec decoder, the backends' typed
settings, the maintainers' policy) is built over the loaded specs and given to the app with the
store and the policy's limits. ``--read-only`` builds none, so the app answers 405 to writes.
With ``--workers N`` every worker builds its own desk from the environment (``create_app``, the
factory uvicorn imports), like the read-only app does.

Its file name is shared on purpose: each ``medbench`` command's module is named after the command or
the noun it serves (docs/cli.md), whatever other package has a module of that name.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from api.answer_cache import AnswerCache
    from api.submission_desk import SubmissionDesk

READ_ONLY_ENV = "MEDBENCH_READ_ONLY"


def build_desk(data_dir: Path | str | None = None) -> SubmissionDesk:
    from api.submission_desk import SubmissionDesk
    from medbench.registry import installed_plugins
    from pipelines.engine.specs import load_specs
    from pipelines.engine.submission_check import SubmissionChecker
    from pipelines.engine.submission_policy import load_policy
    from medbench.layout import DataDir
    from medbench.submissions import SubmissionStore

    data = DataDir(data_dir)
    specs = load_specs(None, installed_plugins())
    store = SubmissionStore.for_data(data)

    def policy():
        return load_policy(data=data)

    limits = policy().limits
    return SubmissionDesk(store=store, check=SubmissionChecker(specs, store, policy),
                          quota_for=lambda owner: policy().quota_for(owner),
                          rate_limit=limits.rate_limit, rate_window_s=float(limits.rate_window_s))


def create_app() -> AnswerCache:
    """uvicorn's factory for ``medbench serve --workers N``: the app with the write routes unless
    ``MEDBENCH_READ_ONLY`` is set (``serve`` sets both from its arguments before the workers start)."""
    from api.app import create_app as create_api

    read_only = os.environ.get(READ_ONLY_ENV) == "1"
    return create_api(desk=None if read_only else build_desk())
