"""``PUT /v1/submissions/{id}/package``: the wheel of an official submission, from its owner.

Order is the contract: the token is checked (401/403 as for ``POST /v1/submissions``) before a
byte of the body is read; the submission must be its owner's (403 ``forbidden`` for another
owner) and waiting for its package (422 ``invalid_submission`` otherwise); the body is streamed to
a temporary file beside the kept packages, refused past 100 MiB (413 ``payload_too_large``, from
``Content-Length`` before reading or as the stream passes it); its sha256 must be the submitted
``package_sha256`` and it must be a wheel with one ``medbench.official`` entry point (422 naming
what is wrong). Then it is kept as ``packages/<sha256>/<wheel name>`` and the submission moves to
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
from warehouse.layout import DataDir
from warehouse.packages import MAX_PACKAGE_BYTES, PackageFailed, check_wheel, wheel_filename
from warehouse.submissions import IllegalTransition, Submission, SubmissionNotFound


def payload_too_large() -> ApiError:
    return ApiError(413, "payload_too_large", f"the package is larger than {MAX_PACKAGE_BYTES} bytes (100 MiB)")


def invalid_package(problem: str) -> ApiError:
    return ApiError(422, "invalid_submission", f"package: {problem}")


async def _stream_to(request: Request, target: Path) -> str:
    """Write the body to ``target`` (at most MAX_PACKAGE_BYTES); its sha256."""
    digest, size = hashlib.sha256(), 0
    with open(target, "wb") as out:
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_PACKAGE_BYTES:
                raise payload_too_large()
            digest.update(chunk)
            out.write(chunk)
    return digest.hexdigest()


def _keep(data: DataDir, submission: Submission, upload: Path) -> Path:
    """Check the uploaded file against the submission; move it to where packages are kept."""
    try:
        check_wheel(upload, submission.package_sha256)
        kept = data.package_path(submission.package_sha256 or "", wheel_filename(upload))
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
    if length.isdigit() and int(length) > MAX_PACKAGE_BYTES:
        raise payload_too_large()
    data.packages.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=".upload-", suffix=".whl", dir=data.packages)
    os.close(handle)
    upload = Path(name)
    try:
        await _stream_to(request, upload)
        kept = await anyio.to_thread.run_sync(_keep, data, submission, upload)
        try:
            return await anyio.to_thread.run_sync(
                desk.store.transition, submission_id, "awaiting_approval",
                f"package {kept.name} uploaded (sha256 {submission.package_sha256})")
        except IllegalTransition as exc:  # another upload moved it meanwhile
            raise invalid_package(str(exc)) from None
    finally:
        upload.unlink(missing_ok=True)
