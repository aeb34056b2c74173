"""``medbench log verify`` and ``medbench log rebuild``: the maintainer's checks of the transparency log.

For maintainers, on the data directory (``MEDBENCH_DATA``). ``verify`` re-reads every entry of
``<data>/log``, recomputes every hash and checks the checkpoint's signature and key lifetime, and,
with ``--checkpoint FILE`` (the copy the publisher keeps beside its key, or one a reader kept),
that the log extends it. ``rebuild`` re-derives the index and the hashes from ``entries.jsonl``
after it was restored from a backup or a replica, then verifies. Exit 0 the log verifies; 1 it
does not (one line says why and what to do); 2 usage error. docs/transparency-log.md explains
the format and the restore.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("log", help="verify or rebuild the transparency log (maintainers)",
                       description=__doc__.split("\n\n", 1)[1] if __doc__ else None)
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, text in (("verify", "verify the log, and that it extends a kept checkpoint"),
                       ("rebuild", "re-derive the index and hashes from entries.jsonl, then verify")):
        a = actions.add_parser(name, help=text, description=text)
        a.add_argument("--checkpoint", type=Path, metavar="FILE",
                       help="a checkpoint kept outside the data directory, which the log must extend")
        a.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from warehouse.layout import DataDir
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
