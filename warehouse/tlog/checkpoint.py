"""Checkpoints: a tree size and root hash, signed in the C2SP tlog-checkpoint signed-note form.

Why: a checkpoint is what a reader keeps. Written in the form Go's checksum database, Sigstore and
the transparency-dev witnesses use (c2sp.org/tlog-checkpoint over c2sp.org/signed-note), any of
their tools can parse and check it. The note text is three lines, each ending in ``\\n``::

    <origin>
    <tree size, decimal, no leading zeros>
    <root hash, standard base64 with padding>

then a blank line, then one signature line per key: ``— <key name> <base64(key hash || signature)>``
(an em dash U+2014 and a space first). The key name is the origin; the 4-byte key hash is
``SHA-256(name || 0x0A || 0x01 || public key)[:4]`` (0x01: Ed25519); the signature is Ed25519's over
the note text, its final newline included. docs/transparency-log.md "Checkpoints" has the recipe.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from warehouse.tlog.signer import NoteSigner

ORIGIN_ENV = "MEDBENCH_LOG_ORIGIN"
DEFAULT_ORIGIN = "medbench/log"
DEMO_ORIGIN = "medbench/demo-log"  # a demo directory's checkpoints can never pass for the service's
SIGNATURE_PREFIX = "\u2014 "
ED25519 = b"\x01"
_SIZE = re.compile(r"^(0|[1-9][0-9]*)$")


class CheckpointError(ValueError):
    """A note that is not a well-formed checkpoint, or that no trusted key validly signs."""


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes
    note: str  # the whole signed note as text

    @property
    def text(self) -> str:
        return note_text(self.origin, self.size, self.root)


def origin_for(kind: str | None) -> str:
    """The origin line of a data directory's checkpoints: ``MEDBENCH_LOG_ORIGIN`` when set (a real
    deployment names its hostname, e.g. ``medbench.example.org/log``), else the default, with a
    distinct one for demo directories."""
    configured = os.environ.get(ORIGIN_ENV, "").strip()
    if kind == "demo":
        return configured + "/demo" if configured else DEMO_ORIGIN
    return configured or DEFAULT_ORIGIN


def check_name(name: str) -> None:
    if not name or any(c.isspace() for c in name) or "+" in name:
        raise CheckpointError(f"origin {name!r} must be non-empty, without spaces or '+' (C2SP signed-note)")


def key_hash(name: str, public_key: bytes) -> bytes:
    """The 4-byte key hash of an Ed25519 key of a signed-note signer."""
    return hashlib.sha256(name.encode() + b"\n" + ED25519 + public_key).digest()[:4]


def verifier_key(name: str, public_key: bytes) -> str:
    """The C2SP verifier key string ``<name>+<hex key hash>+<base64(0x01 || public key)>``."""
    return f"{name}+{key_hash(name, public_key).hex()}+{base64.b64encode(ED25519 + public_key).decode()}"


def note_text(origin: str, size: int, root: bytes) -> str:
    check_name(origin)
    return f"{origin}\n{size}\n{base64.b64encode(root).decode()}\n"


def sign_note(text: str, name: str, signers: Iterable[NoteSigner]) -> str:
    """``text`` as a signed note, one signature line per signer, all under key name ``name``."""
    check_name(name)
    if not text.endswith("\n") or "\n\n" in text:
        raise CheckpointError("a note's text ends in a newline and holds no blank line")
    lines = []
    for signer in signers:
        sig = signer.sign(text.encode())
        lines.append(f"{SIGNATURE_PREFIX}{name} "
                     f"{base64.b64encode(key_hash(name, signer.public_key) + sig).decode()}\n")
    if not lines:
        raise CheckpointError("a signed note needs at least one signature")
    return text + "\n" + "".join(lines)


def sign_checkpoint(origin: str, size: int, root: bytes, signers: Iterable[NoteSigner]) -> Checkpoint:
    text = note_text(origin, size, root)
    return Checkpoint(origin, size, root, sign_note(text, origin, signers))


def split_note(note: str) -> tuple[str, list[tuple[str, bytes, bytes]]]:
    """(text, [(key name, key hash, signature), ...]) of a signed note; ``CheckpointError`` when it
    is malformed. Split at the last blank line, as Go's note.Open does."""
    at = note.rfind("\n\n")
    if at < 0 or not note.endswith("\n"):
        raise CheckpointError("not a signed note: no blank line before the signatures")
    text, sig_block = note[:at + 1], note[at + 2:]
    signatures = []
    for line in sig_block.splitlines():
        if not line.startswith(SIGNATURE_PREFIX):
            raise CheckpointError("a signature line does not start with an em dash and a space")
        name, _, b64 = line[len(SIGNATURE_PREFIX):].rpartition(" ")
        try:
            raw = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError):
            raise CheckpointError("a signature is not base64") from None
        if not name or len(raw) < 5:
            raise CheckpointError("a signature line needs a key name and a key hash with a signature")
        signatures.append((name, raw[:4], raw[4:]))
    if not signatures:
        raise CheckpointError("a signed note needs at least one signature line")
    return text, signatures


def parse_checkpoint(note: str) -> Checkpoint:
    """The checkpoint a note states, checked for form only (``verify_checkpoint`` checks the signature)."""
    text, _ = split_note(note)
    lines = text.split("\n")[:-1]
    if len(lines) < 3:
        raise CheckpointError("a checkpoint needs an origin, a tree size and a root hash")
    origin, size, root_b64 = lines[:3]
    if not _SIZE.match(size):
        raise CheckpointError(f"checkpoint tree size {size!r} is not a decimal number")
    try:
        root = base64.b64decode(root_b64, validate=True)
    except (binascii.Error, ValueError):
        root = b""
    if len(root) != 32:
        raise CheckpointError("checkpoint root hash is not the base64 of 32 bytes")
    check_name(origin)
    return Checkpoint(origin, int(size), root, note)


def signed_by(note: str, name: str, public_keys: Iterable[bytes]) -> list[bytes]:
    """The keys among ``public_keys`` whose signature under ``name`` is on the note and valid.
    ``CheckpointError`` when a line names one of them (same name and key hash) but does not verify:
    per C2SP signed-note a bad signature from a known key rejects the note."""
    text, signatures = split_note(note)
    by_hash = {key_hash(name, k): k for k in public_keys}
    good = []
    for sig_name, khash, sig in signatures:
        key = by_hash.get(khash) if sig_name == name else None
        if key is None:
            continue
        try:
            Ed25519PublicKey.from_public_bytes(key).verify(sig, text.encode())
        except (InvalidSignature, ValueError):
            raise CheckpointError(f"the signature of key {khash.hex()} on this checkpoint does not verify") from None
        good.append(key)
    return good


def verify_checkpoint(note: str, origin: str, public_keys: Iterable[bytes]) -> tuple[Checkpoint, list[bytes]]:
    """The checkpoint and the keys that signed it, when its origin is ``origin`` and at least one of
    ``public_keys`` signed it; ``CheckpointError`` otherwise."""
    checkpoint = parse_checkpoint(note)
    if checkpoint.origin != origin:
        raise CheckpointError(f"checkpoint origin {checkpoint.origin!r} is not this log's ({origin!r})")
    keys = signed_by(note, origin, public_keys)
    if not keys:
        raise CheckpointError(f"checkpoint of size {checkpoint.size} carries no valid signature by a key the log "
                              "trusts at that size")
    return checkpoint, keys


__all__ = ["DEFAULT_ORIGIN", "DEMO_ORIGIN", "ORIGIN_ENV", "Checkpoint", "CheckpointError", "key_hash",
           "note_text", "origin_for", "parse_checkpoint", "sign_checkpoint", "sign_note", "signed_by",
           "split_note", "verifier_key", "verify_checkpoint"]
