"""The recipe of docs/api.md "Checking a signature without medbench", run as printed, importing
nothing of medbench: only ``cryptography`` (inside the recipe), json, base64 and hashlib. The files
come from the ``signed_result_files`` fixture (a result medbench signed and published)."""

import base64
import hashlib
import json

from cryptography.exceptions import InvalidSignature


def _recipe():
    """``check_result`` as docs/api.md prints it (the python block after ``<!-- signature-recipe -->``)."""
    with open(__file__.rsplit("/tests/", 1)[0] + "/docs/api.md", encoding="utf-8") as fh:
        page = fh.read()
    block = page.split("<!-- signature-recipe -->", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    scope: dict = {}
    exec(compile(block, "docs/api.md", "exec"), scope)
    return scope["check_result"]


def _load(path):
    with open(path, "rb") as fh:
        return json.loads(fh.read())


def test_the_docs_recipe_verifies_a_result_with_cryptography_alone(signed_result_files):
    check_result = _recipe()
    record, signature = _load(signed_result_files["result"]), _load(signed_result_files["signature"])
    keys = _load(signed_result_files["keys"])
    assert check_result(record, signature, keys) == keys["keys"][0]["fingerprint"]
    with open(signed_result_files["predictions"], "rb") as fh:
        assert hashlib.sha256(fh.read()).hexdigest() == json.loads(signature["signed"])["predictions_sha256"]

    for name in ("tier", "n", "eval_date", "provenance", "demo"):  # an edited record is refused
        edited = {**record, name: "edited"}
        try:
            check_result(edited, signature, keys)
        except ValueError:
            continue
        raise AssertionError(f"an edited {name} passed the recipe")
    forged = {**signature, "value": base64.b64encode(b"\0" * 64).decode()}
    try:
        check_result(record, forged, keys)
    except InvalidSignature:
        pass
    else:
        raise AssertionError("a forged signature passed the recipe")
    retired = {"keys": [{**keys["keys"][0], "valid_until": "2026-11-30"}]}  # retired before it signed
    try:
        check_result(record, signature, retired)
    except ValueError as exc:
        assert "outside the key's lifetime" in str(exc)
    else:
        raise AssertionError("a signature after valid_until passed the recipe")
