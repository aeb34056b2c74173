"""The token secret: its format, its checksum and its hash.

``mbt_`` + 32 random bytes in unpadded base32 + a 6-character base62 CRC32 checksum: only
``[A-Za-z0-9_]``, so a secret survives copy and paste and secret scanners can recognise it (the
prefix) and reject a typo offline (the checksum). Only the SHA-256 of the secret is stored: 256
random bits need no slow hash, and a leaked store gives nobody a usable token.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import zlib

PREFIX = "mbt_"
_BODY_LEN = 52  # 32 bytes -> 52 base32 characters without padding
_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
SECRET_RE = re.compile(rf"^{PREFIX}[A-Z2-7]{{{_BODY_LEN}}}[0-9A-Za-z]{{6}}$")


def _checksum(body: str) -> str:
    value = zlib.crc32(body.encode())
    out = ""
    for _ in range(6):
        value, digit = divmod(value, 62)
        out = _ALPHABET[digit] + out
    return out


def new_secret() -> str:
    body = base64.b32encode(secrets.token_bytes(32)).decode().rstrip("=")
    return PREFIX + body + _checksum(body)


def well_formed(secret: str) -> bool:
    """Shape and checksum, checked before the store is asked (a typo never costs a query)."""
    if not SECRET_RE.fullmatch(secret):
        return False
    body = secret[len(PREFIX):len(PREFIX) + _BODY_LEN]
    return hmac.compare_digest(_checksum(body), secret[-6:])


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()
