"""The publisher's signing key, and the public keys ever used, kept in the data directory.

The private key is read from ``MEDBENCH_SIGNING_KEY`` (the path of an Ed25519 private key in PEM),
which must lie outside the data directory: whoever can read the data directory (it is what the API
serves and what gets copied around) must not be able to sign as medbench. On real data a missing key
is one clear error at publish time. A demo data directory without one gets a key of its own, made
once and kept outside it, under ``$MEDBENCH_KEY_HOME`` (default
``${XDG_CONFIG_HOME:-~/.config}/medbench/keys``) as ``<key id>.pem``; the key id is kept in the
directory itself (``<data>/DEMO_KEY``), so the key follows the directory when it is moved or renamed
(it used to be found by a hash of the directory's path, so a moved copy silently got a new key). A
demo directory's key, whichever it signs with, has an id starting with ``demo-``, so it says "demo"
wherever it appears (signatures, ``/v1/keys``, ``medbench verify``); its path is printed on every publish.

Every public key that ever signed is listed in ``<data>/releases/keys.json`` (``DataDir.signing_keys``,
kept for ever beside the release log), with ``valid_from`` and ``valid_until``: a new key adds an
entry and closes the open one's ``valid_until``, and no entry is ever removed, so results signed
under an old key stay verifiable after a rotation. ``GET /v1/keys`` serves this file.

Its file name is shared on purpose: the published data's module; the route or command of the same
name serves it.
"""

from __future__ import annotations

import datetime as dt
import base64
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from medbench.files import PUBLIC_FILE, atomic_path, read_regular
from medbench.layout import DataDir
from warehouse.publish import Catalog
from warehouse.releases import Signer
from warehouse.signing import ALGORITHM, SigningKey, key_id_of, raw_public_key, sign_results, utc_stamp

KEY_ENV = "MEDBENCH_SIGNING_KEY"
KEY_HOME_ENV = "MEDBENCH_KEY_HOME"


class SigningKeyError(RuntimeError):
    """The signing key is missing, unreadable, not Ed25519, or inside the data directory."""


class PublicKey(msgspec.Struct, kw_only=True):
    """One entry of the keys file and of ``GET /v1/keys`` (docs/api.md, "Signatures")."""

    key_id: str
    algorithm: str
    public_key: str  # base64 of the 32 raw bytes
    fingerprint: str
    valid_from: dt.date
    valid_until: dt.date | None = None


def keys_path(data: DataDir) -> Path:
    return data.root / "releases" / "keys.json"


def read_keys(data: DataDir) -> list[PublicKey]:
    """Every public key that ever signed for this data directory, oldest first ([] before the first)."""
    try:
        return msgspec.json.decode(read_regular(keys_path(data)), type=dict[str, list[PublicKey]])["keys"]
    except FileNotFoundError:
        return []


def record_key(data: DataDir, key: SigningKey, today: dt.date | None = None) -> list[PublicKey]:
    """List ``key`` in the keys file unless it is there already; a new key closes the open entries'
    ``valid_until`` (today). Returns the keys as now listed."""
    keys = read_keys(data)
    if any(k.key_id == key.key_id for k in keys):
        return keys
    today = today or dt.datetime.now(dt.timezone.utc).date()
    for k in keys:
        if k.valid_until is None:
            k.valid_until = today
    keys.append(PublicKey(key_id=key.key_id, algorithm=ALGORITHM, public_key=base64.b64encode(key.public_key).decode(),
                          fingerprint=key.fingerprint, valid_from=today))
    path = keys_path(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path, mode=PUBLIC_FILE) as tmp:
        tmp.write_bytes(msgspec.json.format(msgspec.json.encode({"keys": keys})) + b"\n")
    return keys


def key_home() -> Path:
    """Where demo keys are kept, outside every data directory."""
    home = os.environ.get(KEY_HOME_ENV)
    if not home:
        config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
        home = str(Path(config) / "medbench" / "keys")
    return Path(home).expanduser().resolve()


def demo_key_id_path(data: DataDir) -> Path:
    """The file in a demo directory naming its key (the key id; the key itself is kept outside)."""
    return data.root / "DEMO_KEY"


def demo_key_path(data: DataDir) -> Path | None:
    """Where the demo key of ``data`` is kept (``<key home>/<key id>.pem``), or None before it has one."""
    try:
        key_id = demo_key_id_path(data).read_text().strip()
    except OSError:
        return None
    if not key_id.startswith("demo-") or not all(c in "0123456789abcdef" for c in key_id[5:]):
        raise SigningKeyError(f"{demo_key_id_path(data)} does not hold a demo key id (demo-<hex>); delete it and "
                              "publish again to make a new demo key")
    return key_home() / f"{key_id}.pem"


def load_key(path: Path, demo: bool = False) -> SigningKey:
    try:
        body = path.read_bytes()
    except OSError as exc:
        raise SigningKeyError(f"cannot read the signing key {path}: {exc.strerror}; set {KEY_ENV} to the path of "
                              "an Ed25519 private key (PEM)") from None
    try:
        private = serialization.load_pem_private_key(body, password=None)
    except (ValueError, TypeError) as exc:
        raise SigningKeyError(f"{path} is not an unencrypted PEM private key ({exc}); make one with "
                              "`openssl genpkey -algorithm ed25519 -out KEY.pem`") from None
    if not isinstance(private, Ed25519PrivateKey):
        raise SigningKeyError(f"{path} is not an Ed25519 key; make one with `openssl genpkey -algorithm ed25519 "
                              "-out KEY.pem`")
    return SigningKey(private, str(path), demo=demo)


def write_new_key(path: Path) -> Ed25519PrivateKey:
    """A new Ed25519 private key in PEM at ``path``, readable by its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    private = Ed25519PrivateKey.generate()
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    with atomic_path(path, mode=0o600) as tmp:
        tmp.write_bytes(pem)
    return private


def new_demo_key(data: DataDir) -> Path:
    """Make a demo key for ``data``: its file under the key home named by its id, the id kept in ``data``."""
    scratch = key_home() / f".new-{os.getpid()}.pem"
    private = write_new_key(scratch)
    path = key_home() / f"demo-{key_id_of(raw_public_key(private.public_key()))}.pem"
    scratch.rename(path)
    with atomic_path(demo_key_id_path(data), mode=PUBLIC_FILE) as tmp:
        tmp.write_text(path.stem + "\n")
    return path


def signing_key(data: DataDir, log: Callable[[str], None]) -> SigningKey:
    """The key this publish signs with (see the module docstring); ``SigningKeyError`` when there is none."""
    configured = os.environ.get(KEY_ENV)
    if configured:
        path = Path(configured).expanduser().resolve()
        if path.is_relative_to(data.root):
            raise SigningKeyError(f"{KEY_ENV}={configured} lies inside the data directory {data.root}, which is "
                                  "served and copied; move the private key outside it and point "
                                  f"{KEY_ENV} there")
        return load_key(path, demo=data.demo_or_real() == "demo")
    if data.demo_or_real() != "demo":
        raise SigningKeyError(f"no signing key: set {KEY_ENV} to the path of an Ed25519 private key (PEM) outside "
                              f"{data.root} (make one with `openssl genpkey -algorithm ed25519 -out KEY.pem`)")
    path = demo_key_path(data)
    if path is None or not path.exists():
        missing = f" ({path} is not on this machine)" if path is not None else ""
        path = new_demo_key(data)
        log(f"created a demo signing key for this demo data directory{missing}: {path} (kept outside it, "
            f"named in {demo_key_id_path(data)}; set {KEY_ENV} to sign with another)")
    key = load_key(path, demo=True)
    log(f"signing with the demo key {key.key_id} ({path}, fingerprint {key.fingerprint})")
    return key


def sign_catalog(data: DataDir, catalog: Catalog, key: SigningKey, today: dt.date | None = None) -> Signer:
    """Make ``catalog`` ready to publish signed: list ``key`` in the keys file, sign its results
    (``catalog.signatures``; a result keeps a signature made under a listed key), and return the
    signer of the release manifest for ``warehouse.publish.publish(..., sign=)``. ``today`` (tests
    replaying a calendar) dates the key's listing and the signatures (noon UTC) alike."""
    known = {k.key_id for k in record_key(data, key, today)}
    when = dt.datetime.combine(today, dt.time(12), tzinfo=dt.timezone.utc) if today else None
    catalog.signatures = sign_results(data, catalog.results, key, known, when)
    stamp = utc_stamp(when)
    return lambda message: key.sign(message, stamp)


def public_keys(keys: list[PublicKey]) -> dict[str, dict[str, Any]]:
    """key_id -> the key's /v1/keys entry as JSON (public_key, fingerprint, valid_from, valid_until),
    what ``medbench verify`` checks a signature and its lifetime against."""
    return {k.key_id: msgspec.to_builtins(k) for k in keys}


def keys_body(keys: list[PublicKey]) -> dict[str, Any]:
    return {"keys": msgspec.to_builtins(keys)}


__all__ = ["KEY_ENV", "KEY_HOME_ENV", "PublicKey", "SigningKeyError", "demo_key_id_path", "demo_key_path",
           "key_home", "keys_body", "keys_path", "load_key", "new_demo_key", "public_keys", "read_keys", "record_key", "sign_catalog", "signing_key", "write_new_key"]
