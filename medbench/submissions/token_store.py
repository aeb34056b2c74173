"""Tokens in the store: create (the secret is returned once and never kept), list, revoke, and the
check every write request makes. Revocation takes effect on the next request in every server process
because each check reads the row (a primary-key lookup; no cache that could outlive a revoke)."""

from __future__ import annotations

import hmac
import math
import secrets as random
import time

import sqlalchemy as sa

from medbench.submissions.records import AuthFailure, Token, TokenNotFound, iso
from medbench.submissions.tables import tokens
from medbench.submissions.token_secrets import new_secret, secret_hash, well_formed

LAST_USED_EVERY_S = 60  # last_used is written at most once a minute per token
SCOPES = frozenset({"submit"})


def _token(row) -> Token:
    return Token(id=row.id, owner=row.owner, scopes=row.scopes.split(","), created_at=iso(row.created_at),
                 expires_at=iso(row.expires_at) if row.expires_at is not None else None,
                 last_used_at=iso(row.last_used_at) if row.last_used_at is not None else None,
                 revoked_at=iso(row.revoked_at) if row.revoked_at is not None else None, note=row.note)


class TokenStore:
    def __init__(self, reader: sa.Engine, writer: sa.Engine):
        self._reader, self._writer = reader, writer

    def create(self, owner: str, scopes: list[str], *, expires_in_s: float | None = None, note: str = "",
               now: float | None = None) -> tuple[Token, str]:
        """(the token, its secret): the secret exists only in this return value."""
        unknown = sorted(set(scopes) - SCOPES)
        if unknown or not scopes:
            raise ValueError(f"unknown scope {unknown[0] if unknown else '(none)'}: the scopes are {', '.join(sorted(SCOPES))}")
        now = time.time() if now is None else now
        secret = new_secret()
        row = {"id": random.token_hex(6), "owner": owner, "scopes": ",".join(sorted(set(scopes))),
               "secret_sha256": secret_hash(secret), "note": note, "created_at": now,
               "expires_at": now + expires_in_s if expires_in_s is not None else None, "window_count": 0}
        with self._writer.begin() as conn:
            conn.execute(tokens.insert().values(**row))
        return self.get(row["id"]), secret

    def get(self, token_id: str) -> Token:
        with self._reader.connect() as conn:
            row = conn.execute(tokens.select().where(tokens.c.id == token_id)).first()
        if row is None:
            raise TokenNotFound(f"no token {token_id!r}: medbench tokens list shows the ids")
        return _token(row)

    def list(self) -> list[Token]:
        with self._reader.connect() as conn:
            rows = conn.execute(tokens.select().order_by(tokens.c.created_at, tokens.c.id)).all()
        return [_token(r) for r in rows]

    def revoke(self, token_id: str, now: float | None = None) -> Token:
        now = time.time() if now is None else now
        with self._writer.begin() as conn:
            done = conn.execute(tokens.update().where(tokens.c.id == token_id, tokens.c.revoked_at.is_(None))
                                .values(revoked_at=now))
            if done.rowcount == 0:
                self.get(token_id)  # raises TokenNotFound when there is no such token
        return self.get(token_id)

    def authenticate(self, secret: str | None, now: float | None = None) -> Token | AuthFailure:
        """The token a bearer secret names, or why it is refused (missing, unknown, expired, revoked)."""
        if not secret:
            return AuthFailure("missing")
        if not well_formed(secret):
            return AuthFailure("unknown")
        now = time.time() if now is None else now
        digest = secret_hash(secret)
        with self._reader.connect() as conn:
            row = conn.execute(tokens.select().where(tokens.c.secret_sha256 == digest)).first()
        if row is None or not hmac.compare_digest(row.secret_sha256, digest):
            return AuthFailure("unknown")
        if row.revoked_at is not None:
            return AuthFailure("revoked")
        if row.expires_at is not None and row.expires_at <= now:
            return AuthFailure("expired")
        if row.last_used_at is None or now - row.last_used_at >= LAST_USED_EVERY_S:
            with self._writer.begin() as conn:
                conn.execute(tokens.update().where(tokens.c.id == row.id).values(last_used_at=now))
        return _token(row)

    def hit(self, token_id: str, limit: int, window_s: float, now: float | None = None) -> int | None:
        """Count one request against the token's fixed window; the seconds to wait when over the limit."""
        now = time.time() if now is None else now
        with self._writer.begin() as conn:
            row = conn.execute(sa.select(tokens.c.window_start, tokens.c.window_count)
                               .where(tokens.c.id == token_id).with_for_update()).one()
            if row.window_start is None or now - row.window_start >= window_s:
                conn.execute(tokens.update().where(tokens.c.id == token_id).values(window_start=now, window_count=1))
                return None
            if row.window_count < limit:
                conn.execute(tokens.update().where(tokens.c.id == token_id)
                             .values(window_count=tokens.c.window_count + 1))
                return None
            return max(1, math.ceil(row.window_start + window_s - now))
