"""``GET /v1/keys``: every public key that ever signed a result or a release of this data directory.

The keys come from the data directory's keys file (``warehouse.keys``), which the publisher appends
to; the service never holds a private key. Old keys stay listed with their ``valid_until``, so a
result signed before a rotation stays verifiable. The encoded answer is kept per state of the file
(its size and modification time), so a key added by a publish that changed no content shows at once.

Its file name is shared on purpose: each route's module is named after its path (docs/api.md),
beside the module that holds what the route serves.
"""

import os

import msgspec
from litestar import Request
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.response.base import ASGIResponse

from api import schemas
from api.responses import prepare, respond
from api.routing import read_only
from api.service import Service
from warehouse.keys import keys_path, read_keys


def handlers() -> list[HTTPRouteHandler]:
    @read_only(
        "/v1/keys", operation_id="listKeys", summary="The public keys that check signatures",
        description="Every Ed25519 public key that signed a result or a release (`signature.key_id` names one), "
        "oldest first, with its fingerprint and validity dates; `valid_until` is null for the key in use. "
        "`medbench verify` checks a result or a release against them, or against keys you already trust.",
        body=schemas.KeyList,
    )
    async def keys(request: Request, service: NamedDependency[Service]) -> ASGIResponse:
        tables = service.tables(request.scope)
        data = service.settings.data
        try:
            st = os.stat(keys_path(data))
            state = (st.st_size, st.st_mtime_ns, st.st_ino)
        except OSError:
            state = None
        key = ("keys", state)
        prepared = tables.bodies.get(key)
        if prepared is None:
            listed = [schemas.PublicKey(**msgspec.structs.asdict(k)) for k in read_keys(data)]  # type: ignore[arg-type]
            prepared = tables.bodies.put(key, prepare(schemas.KeyList(keys=listed)))
        return respond(request.scope, prepared, version=tables.version)

    return keys
