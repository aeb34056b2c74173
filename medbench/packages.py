"""Submitted packages on disk: what makes a file an acceptable wheel, and the name it is kept under.

Why in the storage layer: the API receives a package (``PUT /v1/submissions/{id}/package``) and
the engine runs it, and both must agree on exactly what was accepted. A package is a wheel (a zip
with one top-level ``.dist-info``) declaring exactly one entry point in group ``medbench.official``,
at most ``max_package_bytes()`` (100 MiB unless ``MEDBENCH_MAX_PACKAGE_BYTES`` says otherwise),
whose sha256 is the one submitted. It is kept as ``<data>/packages/<sha256>/<name>-<version>-<tags>.whl``
(``DataDir.package_path``): the file name is rebuilt from the wheel's own metadata, since pip reads
the tags from it, and checked with ``packaging.utils.parse_wheel_filename``.

The wheel is never opened in this process: ``wheel_inspector.py`` does it in a child process with
CPU, memory and time limits (a zip bomb kills the child, not the API server). This process adds
the checks that need medbench's own knowledge: the names a package may not take (``RESERVED_NAMES``
and every distribution installed with medbench). docs/official-tier.md lists what is refused and why.

Its file name is shared on purpose: the published data's module; the route or command of the same
name serves it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

GROUP = "medbench.official"
MAX_PACKAGE_BYTES = 100 << 20  # the default; MEDBENCH_MAX_PACKAGE_BYTES changes it
MAX_PACKAGE_ENV = "MEDBENCH_MAX_PACKAGE_BYTES"
INSPECTOR = Path(__file__).with_name("wheel_inspector.py")
INSPECT_CPU_SECONDS = 20
INSPECT_WALL_SECONDS = 60
INSPECT_MEMORY_BYTES = 768 << 20  # address space of the inspecting child (Python and packaging need ~100 MiB)
# Well-known projects a submitted package may not call itself (docs/official-tier.md): a package
# named like one would be recorded as it in the signed install record. Every distribution installed
# with medbench (the environment its tasks run in) is refused as well (``reserved_names``).
RESERVED_NAMES = frozenset({
    "numpy", "scipy", "pandas", "polars", "pyarrow", "scikit-learn", "sklearn", "torch", "torchvision",
    "torchaudio", "tensorflow", "jax", "jaxlib", "flax", "keras", "transformers", "tokenizers",
    "safetensors", "accelerate", "huggingface-hub", "datasets", "vllm", "triton", "xformers", "sentencepiece",
    "tiktoken", "openai", "anthropic", "requests", "urllib3", "httpx", "certifi", "idna", "charset-normalizer",
    "setuptools", "pip", "wheel", "packaging", "six", "pyyaml", "attrs", "pydantic", "typing-extensions",
    "cryptography", "protobuf", "grpcio", "nvidia-cuda-runtime-cu12", "nvidia-cudnn-cu12", "medbench",
})


class PackageFailed(RuntimeError):
    """The package broke the contract or a sandbox limit; the message is the one-line reason."""


@dataclass(frozen=True)
class Accepted:
    """What the checks found in an accepted wheel."""

    sha256: str
    name: str       # canonical (PEP 503) distribution name
    version: str
    file_name: str  # the canonical wheel file name it is kept under
    requirements: tuple[str, ...]


def wheel_name_problem(file_name: str) -> str | None:
    """Why ``file_name`` is not a plain wheel file name, or None: ``parse_wheel_filename`` must read
    it, and every character must be an ASCII letter, digit or one of ``._+!-`` (the parser does not
    check the platform tag, where ``;`` and ``$`` would otherwise pass), at most 200 characters."""
    if len(file_name) > 200 or not re.fullmatch(r"[A-Za-z0-9._+!-]+\.whl", file_name):
        return "not a valid wheel file name (ASCII letters, digits and ._+!- only, at most 200 characters)"
    try:
        parse_wheel_filename(file_name)
    except (InvalidWheelFilename, ValueError):
        return "not a valid wheel file name (name-version-tags.whl)"
    return None


def max_package_bytes() -> int:
    """The largest package accepted (bytes): ``MEDBENCH_MAX_PACKAGE_BYTES``, else 100 MiB."""
    raw = os.environ.get(MAX_PACKAGE_ENV, "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else MAX_PACKAGE_BYTES


@cache
def reserved_names() -> frozenset[str]:
    """The documented list, plus the canonical name of every distribution in medbench's environment."""
    installed = {canonicalize_name(d.metadata["Name"]) for d in metadata.distributions() if d.metadata["Name"]}
    return RESERVED_NAMES | installed


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def inspect_wheel(path: Path) -> dict:
    """The inspector's facts about ``path`` (run as a bounded child); PackageFailed with its reason."""
    command = [sys.executable, "-I", str(INSPECTOR), str(path), str(INSPECT_CPU_SECONDS), str(INSPECT_MEMORY_BYTES)]
    try:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, env={}, close_fds=True,
                              timeout=INSPECT_WALL_SECONDS)
    except subprocess.TimeoutExpired:
        raise PackageFailed(f"{path.name}: opening the wheel took over {INSPECT_WALL_SECONDS} s; "
                            "it is refused") from None
    try:
        answer = json.loads(done.stdout[:1 << 16]) if done.returncode == 0 else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise PackageFailed(f"{path.name}: opening the wheel went past the inspection limits "
                            f"({INSPECT_CPU_SECONDS} CPU seconds, {INSPECT_MEMORY_BYTES >> 20} MiB); it is refused")
    if "refused" in answer:
        raise PackageFailed(f"{path.name}: {answer['refused']}")
    return answer["ok"]


def accept_wheel(path: Path, expected_sha256: str | None = None, *, named: bool = True,
                 streamed_sha256: str | None = None) -> Accepted:
    """Every check of the door, in order: size, sha256, the bounded inspection, reserved names and,
    when the file carries its own name (``named``; an upload does not), that name.
    ``streamed_sha256``: the digest computed while the file was written (an upload), not redone."""
    path = Path(path)
    if named and not path.name.endswith(".whl"):
        raise PackageFailed(f"{path.name}: not a wheel (the file name must end in .whl)")
    limit = max_package_bytes()
    if path.stat().st_size > limit:
        raise PackageFailed(f"{path.name}: {path.stat().st_size} bytes, over the {limit} byte limit")
    sha = streamed_sha256 or sha256_of(path)
    if expected_sha256 is not None and sha != expected_sha256:
        raise PackageFailed(f"{path.name}: sha256 {sha} differs from the submitted package_sha256 {expected_sha256}")
    facts = inspect_wheel(path)
    if facts["name"] in reserved_names():
        raise PackageFailed(f"{path.name}: the distribution name {facts['name']!r} is taken by a well-known project "
                            "or by a dependency of medbench; give the package a name of its own")
    for requirement in facts["requirements"]:
        if requirement == facts["name"]:
            raise PackageFailed(f"{path.name}: the package requires itself")
    if named:
        problem = wheel_name_problem(path.name)
        if problem:
            raise PackageFailed(f"{path.name[:120]}: {problem}")
        name, version, _, _ = parse_wheel_filename(path.name)
        if name != facts["name"] or str(version) != str(parse_wheel_filename(facts["file_name"])[1]):
            raise PackageFailed(f"{path.name}: the file name says {name} {version}, the wheel's metadata says "
                                f"{facts['name']} {facts['version']}: they must agree")
    return Accepted(sha256=sha, name=facts["name"], version=facts["version"], file_name=facts["file_name"],
                    requirements=tuple(facts["requirements"]))


def wheel_filename(path: Path) -> str:
    """The wheel's canonical file name, from its ``.dist-info`` folder and its ``WHEEL`` tags."""
    return accept_wheel(path, named=False).file_name


def check_wheel(path: Path, expected_sha256: str | None = None) -> str:
    """The wheel's sha256, after every check of the door (``accept_wheel``)."""
    return accept_wheel(path, expected_sha256).sha256
