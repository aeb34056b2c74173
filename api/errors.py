"""The errors a handler raises, as docs/api.md ("Errors and headers") names them: ``ApiError`` and one constructor per code.

``api.error_handlers`` answers each as ``{"error": code, "message": text}`` (and turns Litestar's own
failures into the other documented codes). Plain data that imports nothing of ``api``, so that every
module that refuses a request (``api.params``, ``api.service``, the routes) raises them without
importing the handlers, which need ``api.service`` to name the published version: the dependency
runs one way, errors -> service -> error_handlers -> app.

Its file name is shared on purpose: the service's own module of that name (the pipeline's serves
another side).
"""

from __future__ import annotations

# The scope key ``Service.tables`` sets to the version a request is answered from; error answers carry it.
VERSION_SCOPE_KEY = "medbench_version"


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers  # e.g. Retry-After of a 429


def task_not_found(ref: str) -> ApiError:
    return ApiError(404, "task_not_found", f"no task {ref!r} in this warehouse; GET /v1/tasks lists the tasks")


def model_not_found(slug: str) -> ApiError:
    return ApiError(404, "model_not_found", f"no model {slug!r} in this warehouse; GET /v1/models lists the models")


def run_not_found(run_id: str, why: str = "no published result has this run id") -> ApiError:
    return ApiError(404, "run_not_found", f"{run_id!r}: {why}")


def release_not_found(release: str) -> ApiError:
    return ApiError(404, "release_not_found", f"no release {release[:60]!r}; GET /v1/releases lists the releases")


def metric_not_found(metric: str, task: str, known: list[str]) -> ApiError:
    """A metric the task does not publish: 404, as an unknown task is ``task_not_found``, naming the known ones."""
    return ApiError(404, "metric_not_found", f"no metric {metric[:80]!r} for {task}; its metrics are "
                    f"{', '.join(known)}")


def invalid_parameter(message: str) -> ApiError:
    return ApiError(400, "invalid_parameter", message)


def log_unavailable(cause: str) -> ApiError:
    """The transparency log is missing or does not verify (docs/transparency-log.md): its routes and
    the proofs are refused rather than served from a log nobody can trust."""
    return ApiError(503, "log_unavailable", f"the transparency log cannot be served: {cause}")


def warehouse_unavailable(cause: str | None = None) -> ApiError:
    """Nothing can be served: nothing published yet, or ``cause`` (a damaged warehouse, no paths)."""
    if cause:
        return ApiError(503, "warehouse_unavailable", f"the published warehouse cannot be served: {cause}")
    return ApiError(
        503,
        "warehouse_unavailable",
        "no warehouse has been published in this data directory yet: run `medbench materialize --demo` "
        "(or `medbench demo`), then retry",
    )
