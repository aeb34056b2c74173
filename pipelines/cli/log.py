"""``medbench log``: the transparency log from a shell, as a reader and as its maintainer.

As a reader, client commands through the API (``--api-url``, default ``$MEDBENCH_API_URL``, else
the local server; ``--json`` prints the server's JSON; exit 0 found, 1 not found, 2 usage, 3
unreachable), one per log route: ``checkpoint`` (prints the signed note: keep it, and later pass
it to ``medbench verify --since``), ``entries``, ``proof RUN_ID|RELEASE_ID`` and ``consistency``.

For maintainers, on the data directory (``MEDBENCH_DATA``). ``verify`` re-reads every entry of
``<data>/log``, recomputes every hash and checks the checkpoint's signature and key lifetime, and,
with ``--checkpoint FILE`` (the copy the publisher keeps beside its key, or one a reader kept),
that the log extends it. ``rebuild`` re-derives the index and the hashes from ``entries.jsonl``
after it was restored from a backup or a replica, then verifies. Exit 0 the log verifies; 1 it
does not (one line says why and what to do); 2 usage error. docs/transparency-log.md explains
the format and the restore.

Its file name is shared on purpose: each ``medbench`` command's module is named after the command or
the noun it serves (docs/cli.md), whatever other package has a module of that name.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

PAGE = 1000  # the most entries one page of /v1/log/entries holds


def add_parser(sub: argparse._SubParsersAction) -> None:
    from pipelines.cli.client import common_options
    from pipelines.cli.client import run as run_client

    p = sub.add_parser("log", help="the transparency log: checkpoint, entries, proofs; verify or rebuild (maintainers)",
                       description=__doc__.split("\n\n", 1)[1] if __doc__ else None)
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    common = common_options()

    def client(name: str, text: str, fn: Any) -> argparse.ArgumentParser:
        a = actions.add_parser(name, parents=[common], help=text, description=text)
        a.set_defaults(func=lambda args: run_client(fn, args))
        return a

    client("checkpoint", "the log's signed checkpoint (its note: keep it for `medbench verify --since`)", _checkpoint)
    a = client("entries", f"a page of the log's entries (at most {PAGE} per page)", _entries)
    a.add_argument("--start", type=int, default=0, help="first entry's index (default 0)")
    a.add_argument("--end", type=int, default=None, help=f"index after the last (default: start + {PAGE}, or the size)")
    a = client("proof", "the inclusion proof of a result or release against the log's checkpoint", _proof)
    a.add_argument("id", metavar="RUN_ID|RELEASE_ID")
    a = client("consistency", "the proof that the log of size TO extends the log of size FROM", _consistency)
    a.add_argument("--from", dest="from_", type=int, required=True, metavar="SIZE",
                   help="the size of the older checkpoint (e.g. one you kept)")
    a.add_argument("--to", type=int, default=None, metavar="SIZE", help="the newer size (default: the checkpoint's)")
    for name, text in (("verify", "verify the log, and that it extends a kept checkpoint"),
                       ("rebuild", "re-derive the index and hashes from entries.jsonl, then verify")):
        a = actions.add_parser(name, help=text, description=text)
        a.add_argument("--checkpoint", type=Path, metavar="FILE",
                       help="a checkpoint kept outside the data directory, which the log must extend")
        a.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from medbench.layout import DataDir
    from warehouse.tlog.audit import LogIntegrityError, audit
    from warehouse.tlog.store import LogStore

    data = DataDir()
    store = LogStore.of_data(data.root)
    kept = None
    if args.checkpoint is not None:
        try:
            kept = args.checkpoint.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            print(f"medbench log: cannot read the checkpoint {args.checkpoint}: {exc}", file=sys.stderr)
            return 1
    if args.action == "rebuild":
        if not store.entries_path.exists():
            print(f"medbench log: no {store.entries_path} to rebuild from; restore it from a backup or a replica "
                  "first (docs/transparency-log.md)", file=sys.stderr)
            return 1
        print(f"rebuilt the index and hashes of {store.rebuild()} entries in {store.dir}")
    try:
        state = audit(store, kept=kept, kept_name=f"checkpoint {args.checkpoint}")
    except LogIntegrityError as exc:
        print(f"medbench log: {exc}", file=sys.stderr)
        return 1
    if state.checkpoint is None:
        print(f"medbench log: {data.root} has no transparency log yet (it is written at the next publish)",
              file=sys.stderr)
        return 1
    cp = state.checkpoint
    extends = f"; extends the kept checkpoint of {args.checkpoint}" if kept is not None else ""
    print(f"valid: {state.size} entries, checkpoint {cp.origin} size {cp.size} root {cp.root.hex()}{extends}")
    return 0


def _checkpoint(client: Any, args: argparse.Namespace) -> int:
    from pipelines.cli.client import emit

    body = client.get("/v1/log/checkpoint")
    if args.json:
        emit(body)
    else:
        print(body["note"], end="" if body["note"].endswith("\n") else "\n")
    return 0


def _entries(client: Any, args: argparse.Namespace) -> int:
    from pipelines.cli.client import emit

    body = client.get("/v1/log/entries", start=args.start, end=args.end)
    if args.json:
        emit(body)
    else:
        print(f"entries {body['start']} to {body['end']} of a log of {body['tree_size']}")
        for row in body["entries"]:
            print(f"{row['index']:>7}  {row['type']:<12} {row['id']:<20} {row['leaf_hash']}")
    return 0


def _proof(client: Any, args: argparse.Namespace) -> int:
    from pipelines.cli.client import emit
    from warehouse.versions import VERSION_RE

    kind = "releases" if VERSION_RE.match(args.id) else "results"
    body = client.get(f"/v1/{kind}/{args.id}/proof")
    if args.json:
        emit(body)
        return 0
    cp = body["checkpoint"]
    print(f"{kind[:-1]} {args.id}: entry {body['leaf_index']} of {body['tree_size']}, leaf hash {body['leaf_hash']}")
    print(f"  entry: {body.get('entry')}")
    print(f"  {len(body['hashes'])} hashes to the root {cp['root_hash']} of checkpoint {cp.get('origin')} size "
          f"{cp['tree_size']}, signed by key {cp['key_id']}:")
    for h in body["hashes"]:
        print(f"    {h}")
    print(f"  check it: medbench verify {args.id} (or docs/transparency-log.md, with hashlib alone)")
    return 0


def _consistency(client: Any, args: argparse.Namespace) -> int:
    from pipelines.cli.client import emit

    body = client.get("/v1/log/consistency", **{"from": args.from_, "to": args.to})
    if args.json:
        emit(body)
    else:
        print(f"the log of {body['to']} entries extends the log of {body['from']} by these {len(body['hashes'])} hashes:")
        for h in body["hashes"]:
            print(f"  {h}")
    return 0
