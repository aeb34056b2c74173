"""The website's pages carry ``X-Content-Type-Options: nosniff`` and a Content-Security-Policy that
lets exactly what the pages use run: the site's own stylesheet and its one inline script (by hash),
nothing from another origin, no framing."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

from litestar.testing import TestClient

from api.app import create_app
from support.api_data import RUN_IDS

PAGES = ["/", "/models", "/datasets", "/compare", "/agents", "/about", "/tasks/clinicalqa", f"/r/{RUN_IDS['medgemma-cqa0']}"]


def policy(header: str) -> dict[str, list[str]]:
    return {d.split()[0]: d.split()[1:] for d in (part.strip() for part in header.split(";")) if d}


def test_pages_send_nosniff_and_a_policy_that_fits_them(shared_data: tuple[Path, str]) -> None:
    with TestClient(create_app(shared_data[0])) as c:
        for path in [*PAGES, "/r/0123456789ab"]:  # the last: the HTML error page
            response = c.get(path)
            assert response.headers["content-type"].startswith("text/html"), path
            assert response.headers["x-content-type-options"] == "nosniff", path
            csp = policy(response.headers["content-security-policy"])
            assert csp["default-src"] == ["'none'"] and csp["frame-ancestors"] == ["'none'"]
            assert csp["style-src"] == ["'self'"] and "'unsafe-inline'" not in csp["script-src"]
            html = response.text
            # everything the page loads is same-origin; nothing inline that the policy would block
            assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=\"(https?:)?//", html), path
            assert " style=" not in html and "<style" not in html and " on" + "click=" not in html, path
            for body in re.findall(r"<script>(.*?)</script>", html, re.S):
                digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
                assert f"'sha256-{digest}'" in csp["script-src"], path
        assert "<script>" in c.get(PAGES[-1]).text  # the result page's copy button is covered above
        assert c.head("/").headers["content-security-policy"]
