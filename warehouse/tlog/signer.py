"""What the log needs of a signing key, and the adapter from the publisher's key.

Why: the log signs two things, checkpoints and key rotations, with raw Ed25519 signatures (the
C2SP signed-note form holds the 64 raw bytes). It needs only a key's 32 raw public bytes and a
``sign(message) -> signature`` function, so it depends on this small protocol and not on how the
publisher loads and names its keys (``warehouse.keys``/``warehouse.signing``, which may change):
``from_signing_key`` is the one place that knows that key object.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, Protocol

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from warehouse.tlog.entries import key_id_of


class NoteSigner(Protocol):
    public_key: bytes  # the 32 raw bytes of the Ed25519 public key
    key_id: str  # the id the key is published under (``entries.names_key``: demo keys start ``demo-``)

    def sign(self, message: bytes) -> bytes:
        """The raw 64-byte Ed25519 signature of ``message``."""
        ...


class Ed25519NoteSigner:
    """A NoteSigner over a private key held in memory."""

    def __init__(self, private: Ed25519PrivateKey):
        self._private = private
        self.public_key = private.public_key().public_bytes(serialization.Encoding.Raw,
                                                            serialization.PublicFormat.Raw)
        self.key_id = key_id_of(self.public_key)

    def sign(self, message: bytes) -> bytes:
        return self._private.sign(message)


class _PublisherKeySigner:
    def __init__(self, key: Any):
        self._key = key
        self.public_key = bytes(key.public_key)
        self.key_id = str(getattr(key, "key_id", None) or key_id_of(self.public_key))

    def sign(self, message: bytes) -> bytes:
        raw = getattr(self._key, "sign_bytes", None)  # the raw primitive, where the key object has one
        return raw(message) if raw is not None else base64.b64decode(self._key.sign(message)["value"])


def load_note_signer(path: Path) -> NoteSigner:
    """A NoteSigner over the Ed25519 PEM key at ``path``, read the way the publisher reads its own
    (``warehouse.keys.load_key``: its ``SigningKeyError`` says what is wrong with the file)."""
    from warehouse.keys import load_key  # warehouse.keys imports the publisher; only this path needs it

    return from_signing_key(load_key(path, demo=path.stem.startswith("demo-")))


def from_signing_key(key: Any) -> NoteSigner:
    """A NoteSigner over the publisher's ``warehouse.signing.SigningKey``: its ``public_key`` raw
    bytes, its ``key_id`` (so a demo key is ``demo-...`` in the log as in ``/v1/keys``), and ``sign_bytes(message) -> signature`` where it has one, else
    ``sign(message) -> {"value": base64 signature, ...}``."""
    return _PublisherKeySigner(key)


__all__ = ["Ed25519NoteSigner", "NoteSigner", "from_signing_key", "load_note_signer"]
