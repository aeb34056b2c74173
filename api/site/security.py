"""Security headers for the website's pages: ``X-Content-Type-Options`` and a Content-Security-Policy.

The site loads nothing from elsewhere (no CDN, no web fonts): one stylesheet from ``/static``, inline
SVG charts (presentation attributes, no ``style``), forms that GET same-origin pages, and one small
inline script (the result page's "Copy BibTeX" button). So the policy allows only the site's own
stylesheet and exactly that script, by its SHA-256 hash taken from the templates at import time: an
injected ``<script>`` (were escaping ever to fail) would not run, and the page cannot be framed.
A new inline script in a template gets its hash here automatically; a script from another origin
would need this policy changed on purpose.
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent / "templates"
_SCRIPT_RE = re.compile(r"<script>(.*?)</script>", re.S)


def inline_script_hashes(templates: Path = TEMPLATES) -> list[str]:
    """CSP source expressions for every inline ``<script>`` body in the templates. The bodies hold no
    template syntax, so they render verbatim (tests/unit/api/test_site_security.py checks the rendered page)."""
    hashes = set()
    for path in sorted(templates.glob("*.html")):
        for body in _SCRIPT_RE.findall(path.read_text(encoding="utf-8")):
            digest = base64.b64encode(hashlib.sha256(body.encode("utf-8")).digest()).decode()
            hashes.add(f"'sha256-{digest}'")
    return sorted(hashes)


def content_security_policy() -> str:
    scripts = " ".join(inline_script_hashes()) or "'none'"
    return "; ".join([
        "default-src 'none'",
        "style-src 'self'",
        f"script-src {scripts}",
        "img-src 'self' data:",
        "connect-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ])


PAGE_HEADERS = {"x-content-type-options": "nosniff", "content-security-policy": content_security_policy()}
