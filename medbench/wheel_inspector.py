"""The program that opens a submitted wheel: a child process, bounded, never the API server itself.

Why a separate process: a wheel is a zip that anyone with a submit token can send, and a zip can
claim anything (a 1 KB member that inflates to gigabytes, a member name of 10,000 bytes, a bzip2
stream that eats memory). So ``medbench.packages`` runs this file with the interpreter's isolated
mode (``-I``), and it limits itself before it opens a byte (CPU seconds, address space, no file
writes); the parent adds a wall-time limit. Whatever the wheel does, the worst is this child dying,
which the parent reports as a refusal in its own words (docs/official-tier.md, "Threat model").

Standard library and ``packaging`` only. It prints one JSON object: ``{"ok": {...facts}}`` or
``{"refused": "<reason in medbench's words>"}``.
"""

import configparser
import email.parser
import json
import re
import resource
import stat
import sys
import zipfile

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

GROUP = "medbench.official"
MAX_MEMBERS = 10_000
MAX_MEMBER_BYTES = 256 << 20  # one member, uncompressed (the central directory, then as it is read)
MAX_TOTAL_BYTES = 1 << 30     # all members, uncompressed
MAX_METADATA_BYTES = 1 << 20  # METADATA, WHEEL, entry_points.txt are read whole, so smaller
MAX_PATH_BYTES = 512          # a member's whole name
MAX_PART_BYTES = 128          # one folder or file name within it (ext4's limit is 255)
MAX_NAME_CHARS = 64           # a distribution name; the version likewise
ALLOWED_COMPRESSION = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}
NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._]*[A-Za-z0-9])?")  # a dist-info name: '-' is escaped to '_'
OWN_SCHEMES = ("purelib", "platlib")  # .data/ schemes that install into site-packages, like the root


class Refused(Exception):
    """The wheel is refused; the message is the reason, in medbench's words."""


def limit_self(cpu_seconds: int, memory_bytes: int) -> None:
    for which, value in ((resource.RLIMIT_CPU, cpu_seconds), (resource.RLIMIT_AS, memory_bytes),
                         (resource.RLIMIT_FSIZE, 0), (resource.RLIMIT_CORE, 0)):
        resource.setrlimit(which, (value, value))


def _member_name(info: zipfile.ZipInfo) -> str:
    name = info.filename
    shown = name[:60].encode("ascii", "backslashreplace").decode()
    if not name.isascii() or any(ord(c) < 32 or c == "\x7f" for c in name):
        raise Refused(f"member {shown!r}: member names must be printable ASCII")
    if len(name) > MAX_PATH_BYTES:
        raise Refused(f"member {shown}...: its name is {len(name)} bytes long, over {MAX_PATH_BYTES}")
    parts = name.rstrip("/").split("/")
    if name.startswith("/") or "\\" in name or re.match(r"[A-Za-z]:", name):
        raise Refused(f"member {shown!r}: absolute paths and backslashes are not allowed")
    if any(p in ("", ".", "..") for p in parts):
        raise Refused(f"member {shown!r}: empty, '.' and '..' path parts are not allowed")
    if any(len(p) > MAX_PART_BYTES for p in parts):
        raise Refused(f"member {shown}...: a folder or file name over {MAX_PART_BYTES} bytes")
    if stat.S_ISLNK(info.external_attr >> 16):
        raise Refused(f"member {shown!r}: symbolic links are not allowed")
    return name


def check_members(wheel: zipfile.ZipFile) -> list[str]:
    """Every member checked from the central directory, then read under the same caps."""
    infos = wheel.infolist()
    if len(infos) > MAX_MEMBERS:
        raise Refused(f"{len(infos)} members, over the limit of {MAX_MEMBERS}")
    names, total = [], 0
    for info in infos:
        name = _member_name(info)
        if info.compress_type not in ALLOWED_COMPRESSION:
            raise Refused(f"member {name!r}: compression method {info.compress_type} is not allowed "
                          "(only stored and deflate)")
        if info.file_size > MAX_MEMBER_BYTES:
            raise Refused(f"member {name!r}: {info.file_size} bytes uncompressed, over {MAX_MEMBER_BYTES}")
        total += info.file_size
        if total > MAX_TOTAL_BYTES:
            raise Refused(f"the members add up to more than {MAX_TOTAL_BYTES} bytes uncompressed")
        names.append(name)
    if len(set(names)) != len(names):
        raise Refused("a member name appears twice")
    for info in infos:  # the sizes the directory declares are enforced, not believed
        read_member(wheel, info, info.file_size)
    return names


def read_member(wheel: zipfile.ZipFile, info: zipfile.ZipInfo, cap: int) -> bytes:
    """The member's bytes, stopped past ``cap`` or past its declared size, whichever is first."""
    chunks, size = [], 0
    keep = cap <= MAX_METADATA_BYTES
    try:
        with wheel.open(info) as handle:
            while chunk := handle.read(1 << 16):
                size += len(chunk)
                if size > cap or size > info.file_size:
                    raise Refused(f"member {info.filename!r} inflates past {min(cap, info.file_size)} bytes")
                if keep:
                    chunks.append(chunk)
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, NotImplementedError) as exc:
        raise Refused(f"member {info.filename!r} cannot be read ({type(exc).__name__})") from None
    return b"".join(chunks)


def _text(wheel: zipfile.ZipFile, name: str) -> str:
    info = wheel.getinfo(name)
    if info.file_size > MAX_METADATA_BYTES:
        raise Refused(f"{name}: over {MAX_METADATA_BYTES} bytes")
    try:
        return read_member(wheel, info, MAX_METADATA_BYTES).decode("utf-8")
    except UnicodeDecodeError:
        raise Refused(f"{name} is not UTF-8") from None


def _dist_info(names: list[str]) -> tuple[str, str, str]:
    """(folder, name, version) of the one top-level ``.dist-info`` folder."""
    found = sorted({n.split("/", 1)[0] for n in names if n.split("/", 1)[0].endswith(".dist-info")})
    if len(found) != 1:
        raise Refused(f"not a wheel (it has {len(found)} .dist-info folders, not one)")
    folder = found[0]
    parts = folder.removesuffix(".dist-info").split("-")
    if len(parts) != 2 or not NAME.fullmatch(parts[0]) or len(parts[0]) > MAX_NAME_CHARS:
        raise Refused(f"the .dist-info folder {folder[:80]!r} is not NAME-VERSION.dist-info with a plain name of "
                      f"at most {MAX_NAME_CHARS} ASCII letters, digits, '.' and '_'")
    if len(parts[1]) > MAX_NAME_CHARS:
        raise Refused(f"the version in {folder[:80]!r} is over {MAX_NAME_CHARS} characters")
    return folder, parts[0], parts[1]


def _version(text: str, where: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        raise Refused(f"{where}: {text[:40]!r} is not a valid version") from None


def _metadata(wheel: zipfile.ZipFile, folder: str, name: str, version: str) -> list[str]:
    """METADATA must name the same project and version as the folder; its requirements come back."""
    if f"{folder}/METADATA" not in wheel.namelist():
        raise Refused(f"not a wheel ({folder}/METADATA is missing)")
    meta = email.parser.HeaderParser().parsestr(_text(wheel, f"{folder}/METADATA"))
    meta_name, meta_version = meta.get("Name", "").strip(), meta.get("Version", "").strip()
    if canonicalize_name(meta_name) != canonicalize_name(name):
        raise Refused(f"METADATA names the project {meta_name[:60]!r} but the wheel's .dist-info folder is "
                      f"{name!r}: they must agree")
    if _version(meta_version, "METADATA Version") != _version(version, folder):
        raise Refused(f"METADATA says version {meta_version[:40]!r} but the .dist-info folder says {version!r}")
    requirements = []
    for line in meta.get_all("Requires-Dist") or []:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            raise Refused(f"the requirement {line[:80]!r} cannot be parsed") from None
        if requirement.url is not None:
            raise Refused(f"the requirement {line[:120]!r} points at a URL or a version-control repository; "
                          "requirements must name projects on the package index")
        requirements.append(canonicalize_name(requirement.name))
    return requirements


def _file_name(wheel: zipfile.ZipFile, folder: str, name: str, version: str) -> str:
    """The canonical file name from the folder and the ``WHEEL`` tags, checked as pip will read it."""
    meta = _text(wheel, f"{folder}/WHEEL") if f"{folder}/WHEEL" in wheel.namelist() else ""
    tags = [line.split(":", 1)[1].strip() for line in meta.splitlines() if line.lower().startswith("tag:")]
    if not tags or not all(re.fullmatch(r"[\w.]+-[\w.]+-[\w.]+", t) and t.isascii() for t in tags):
        raise Refused("not a wheel (its WHEEL file names no valid tag)")
    parts = [t.split("-") for t in tags]
    joined = "-".join(".".join(sorted({p[i] for p in parts})) for i in range(3))
    file_name = f"{name}-{version}-{joined}.whl"
    try:
        parsed_name, parsed_version, _, _ = parse_wheel_filename(file_name)
    except (InvalidWheelFilename, InvalidVersion) as exc:
        raise Refused(f"its name, version and tags do not make a valid wheel file name ({exc})") from None
    if parsed_name != canonicalize_name(name) or parsed_version != _version(version, folder):
        raise Refused("its name and version do not survive the wheel file name")
    if len(file_name) > 200:
        raise Refused(f"its file name would be {len(file_name)} characters long, over 200")
    return file_name


def _data_entries(names: list[str], folder: str) -> None:
    """``.data/`` may only add to the package's own top-level folders (purelib/platlib): anything
    else would install outside it (scripts, headers, the environment's prefix, a ``.dist-info``)."""
    data = folder.removesuffix(".dist-info") + ".data"
    roots = {n.split("/", 1)[0] for n in names if "/" in n} - {folder, data}
    for n in names:
        top = n.split("/", 1)[0]
        if top.endswith(".data") and top != data:
            raise Refused(f"member {n[:80]!r}: a .data folder of another distribution")
        if top != data or n.rstrip("/") == data:
            continue
        parts = n.split("/")
        scheme, inner = parts[1], parts[2] if len(parts) > 2 else ""
        if scheme not in OWN_SCHEMES:
            raise Refused(f"member {n[:80]!r}: .data/{scheme}/ installs outside the package; only "
                          f".data/purelib/ and .data/platlib/ into the package's own folders are allowed")
        if inner.endswith(".dist-info") or inner.endswith(".data") or (inner and inner not in roots and len(parts) > 3):
            raise Refused(f"member {n[:80]!r}: .data/{scheme}/ writes {inner[:60]!r}, which is not one of the "
                          "package's own folders")
        if len(parts) == 3 and inner:
            raise Refused(f"member {n[:80]!r}: .data/{scheme}/ writes a top-level file; only the package's "
                          "own folders may be added to")


def _entry_points(wheel: zipfile.ZipFile, folder: str) -> None:
    name = f"{folder}/entry_points.txt"
    if name not in wheel.namelist():
        raise Refused(f"no entry_points.txt; declare one entry point in group {GROUP!r}")
    parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
    parser.optionxform = str  # entry point names keep their case
    try:
        parser.read_string(_text(wheel, name))
    except configparser.Error as exc:
        raise Refused(f"entry_points.txt cannot be read ({type(exc).__name__})") from None
    found = list(parser[GROUP]) if parser.has_section(GROUP) else []
    if len(found) != 1:
        raise Refused(f"declares {len(found)} entry points in group {GROUP!r}, not exactly one")


def inspect(path: str) -> dict:
    if not zipfile.is_zipfile(path):
        raise Refused("not a wheel (not a zip archive)")
    try:
        wheel = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise Refused(f"not a wheel (the zip cannot be read: {type(exc).__name__})") from None
    with wheel:
        names = check_members(wheel)
        folder, name, version = _dist_info(names)
        requirements = _metadata(wheel, folder, name, version)
        file_name = _file_name(wheel, folder, name, version)
        _data_entries(names, folder)
        _entry_points(wheel, folder)
    return {"name": canonicalize_name(name), "version": version, "file_name": file_name,
            "requirements": requirements}


def main(path: str, cpu_seconds: str, memory_bytes: str) -> int:
    limit_self(int(cpu_seconds), int(memory_bytes))
    try:
        answer = {"ok": inspect(path)}
    except Refused as refused:
        answer = {"refused": str(refused)}
    sys.stdout.write(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
