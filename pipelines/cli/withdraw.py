"""``medbench withdraw RUN_ID --reason TEXT``: withdraw a published result in the open, then publish.

For maintainers, on the data directory (``MEDBENCH_DATA``). Nothing is deleted: the result keeps its
page, JSON and predictions, shown as withdrawn with its reason and date; it leaves the current
leaderboards and lookups and stays in the releases published before. Exit 0 withdrawn and
published; 1 when it cannot be (an unknown run id, a result already withdrawn: one line says why);
2 usage error (argparse).

Its file name is shared on purpose: each ``medbench`` command's module is named after the command or
the noun it serves (docs/cli.md), whatever other package has a module of that name.
"""

from __future__ import annotations

import argparse
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("withdraw", help="withdraw a published result (kept, marked withdrawn) and publish",
                       description=__doc__.split("\n\n", 1)[1] if __doc__ else None)
    p.add_argument("run_id", metavar="RUN_ID")
    p.add_argument("--reason", required=True, metavar="TEXT", help="why, shown with the result for ever")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pipelines.orchestration.plugins import specs as load_specs
    from pipelines.engine.withdraw import withdraw_and_publish
    from medbench.layout import DataDir
    from warehouse.withdrawals import WithdrawalError

    data = DataDir()
    try:
        _, version = withdraw_and_publish(load_specs(), data, args.run_id, args.reason, print)
    except WithdrawalError as exc:
        print(f"medbench withdraw: {exc}", file=sys.stderr)
        return 1
    print(f"release {version} attests the withdrawal of {args.run_id}")
    return 0
