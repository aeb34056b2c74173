"""``PUT /v1/submissions/{id}/package``: the wheel of an official submission, from its owner.

Order is the contract: the token is checked (401/403 as for ``POST /v1/submissions``) before a
byte of the body is read; the submission must be its owner's (403 ``forbidden`` for another
owner) and waiting for its package (422 ``invalid_submission`` otherwise); the body is streamed to
a temporary file beside the kept packages and hashed as it streams, refused past
``max_package_bytes()`` (100 MiB unless ``MEDBENCH_MAX_PACKAGE_BYTES`` says otherwise; 413
``payload_too_large``, from ``Content-Length`` before reading or as the stream passes it; the HTTP
layer lets this one route's body past its 1 MiB cap, ``api.http_protocol``); its sha256 must be the
submitted ``package_sha256`` and it must pass the door's checks (``medbench.packages.accept_wheel``:
opened in a bounded child process, never in this one; 422 naming what is wrong, in medbench's words).
Then it is kept as ``packages/<sha256>/<wheel name>`` and the submission moves to
``awaiting_approval``. A refusal keeps nothing.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import anyio.to_thread
from litestar import Request

from api.errors import ApiError
from api.submission_desk import SubmissionDesk, authorize
from medbench.layout import DataDir
from medbench.packages import PackageFailed, accept_wheel, max_package_bytes
from medbench.submissions import IllegalTransition, Submission, SubmissionNotFound


def payload_too_large() -> ApiError:
    limit = max_package_bytes()
    return ApiError(413, "payload_too_large", f"the package is larger than {limit} bytes ({limit / (1 << 20):g} MiB)")


def invalid_package(problem: str) -> ApiError:
    return ApiError(422, "invalid_submission", f"package: {problem}")


async def _stream_to(request: Request, target: Path) -> str:
    """Write the body to ``target`` (at most ``max_package_bytes()``); its sha256."""
    digest, size, limit = hashlib.sha256(), 0, max_package_bytes()
    with open(target, "wb") as out:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise payload_too_large()
            digest.update(chunk)
            out.write(chunk)
    return digest.hexdigest()


def _keep(data: DataDir, submission: Submission, upload: Path, sha256: str) -> Path:
    """Check the uploaded file against the submission; move it to where packages are kept."""
    try:
        accepted = accept_wheel(upload, submission.package_sha256, named=False, streamed_sha256=sha256)
        kept = data.package_path(submission.package_sha256 or "", accepted.file_name)
    except (PackageFailed, ValueError) as exc:
        raise invalid_package(str(exc).removeprefix(f"{upload.name}: ")) from None
    kept.parent.mkdir(parents=True, exist_ok=True)
    os.replace(upload, kept)
    return kept


async def upload_package(desk: SubmissionDesk, data: DataDir, request: Request, submission_id: str) -> Submission:
    token = await authorize(desk, request)
    try:
        submission = await anyio.to_thread.run_sync(desk.store.get, submission_id)
    except SubmissionNotFound:
        raise ApiError(404, "submission_not_found", f"no submission {submission_id[:40]!r}") from None
    if submission.owner != token.owner:
        raise ApiError(403, "forbidden", f"submission {submission_id} belongs to {submission.owner}, not to "
                       f"{token.owner}: only its owner uploads its package")
    if submission.state != "awaiting_package":
        raise invalid_package(f"submission {submission_id} is {submission.state}, not awaiting_package")
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > max_package_bytes():
        raise payload_too_large()
    data.packages.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=".upload-", suffix=".whl", dir=data.packages)
    os.close(handle)
    upload = Path(name)
    try:
        sha256 = await _stream_to(request, upload)
        kept = await anyio.to_thread.run_sync(_keep, data, submission, upload, sha256)
        try:
            return await anyio.to_thread.run_sync(
                desk.store.transition, submission_id, "awaiting_approval",
                f"package {kept.name} uploaded (sha256 {submission.package_sha256})")
        except IllegalTransition as exc:  # another upload moved it meanwhile
            raise invalid_package(str(exc)) from None
    finally:
        upload.unlink(missing_ok=True)
