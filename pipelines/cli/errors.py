"""What the ``medbench`` command prints for an error: one line a person can act on.

Why: a spec typo or a bad outputs file used to end in a ~20-line traceback with the one useful
line (``file: key: problem``) somewhere inside it. Errors in what a person handed us (spec files,
replay/outputs files, an installed plug-in that does not implement its protocol, the data
directory's demo or real) are theirs to fix: one line on stderr, exit 2 (docs/cli.md, "Errors a person can act on"). Anything else is ours: one line ``error: ...`` and a hint to rerun with
``--debug``, which shows the whole traceback, exit 1.

Its file name is shared on purpose: each ``medbench`` command's module is named after the command or
the noun it serves (docs/cli.md), whatever other package has a module of that name.
"""

from __future__ import annotations

USAGE = 2
FAILURE = 1


def _user_error_types() -> tuple[type[BaseException], ...]:
    """The input/validation errors, imported only when an error happened (client commands stay light)."""
    import msgspec

    from pipelines.backends.replay import ReplayError
    from medbench.conformance import PluginError
    from pipelines.engine.specs import SpecError
    from warehouse.keys import SigningKeyError
    from medbench.layout import DemoOrRealError
    from warehouse.tlog.audit import LogIntegrityError

    return (SpecError, ReplayError, PluginError, DemoOrRealError, SigningKeyError, LogIntegrityError,
            msgspec.ValidationError)


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " ".join(lines) if len(lines) <= 3 else lines[0] + " ..."


def describe(exc: BaseException) -> tuple[int, str]:
    """(exit code, the one line to print) for an exception that reached the command."""
    try:
        user = isinstance(exc, _user_error_types())
    except Exception:  # an import failed: describe it as our error
        user = False
    if user:
        return USAGE, f"medbench: {_one_line(str(exc))}"
    message = _one_line(str(exc)) or type(exc).__name__
    return FAILURE, (f"error: {type(exc).__name__}: {message} "
                     "(an unexpected error; run again with --debug for the traceback)")
