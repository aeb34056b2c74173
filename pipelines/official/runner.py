"""The program medbench runs inside the sandbox: it calls the package's one entry point.

Standard library only, and never imported by medbench itself: the sandbox binds this file
read-only and runs it with the package's own virtual environment. Why a separate program: the
package's code must run in a process that holds nothing of medbench's (no data directory, no
environment, no labels), and its answers must come back on one channel medbench validates line
by line. Whatever the package prints goes to stderr, so only this program writes the answers
channel (the original stdout): one JSON object per yielded answer, then ``{"medbench_done": n}``;
on an exception ``{"medbench_error": "<Type>: <message>"}`` and exit status 1.
"""

import json
import os
import sys
from importlib.metadata import entry_points

GROUP = "medbench.official"


def _answers_channel():
    """The original stdout for answers; fd 1 then points at stderr, so stray prints cannot forge lines."""
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return channel


def _instances(path):
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def main(instances_path, context_path):
    channel = _answers_channel()
    try:
        found = list(entry_points(group=GROUP))
        if len(found) != 1:
            raise LookupError(f"the package must expose exactly one entry point in group {GROUP!r}, found "
                              f"{len(found)}")
        predict = found[0].load()
        with open(context_path, encoding="utf-8") as handle:
            context = json.load(handle)
        n = 0
        for answer in predict(_instances(instances_path), context):
            channel.write(json.dumps(answer, ensure_ascii=False, allow_nan=False) + "\n")
            n += 1
        channel.write(json.dumps({"medbench_done": n}) + "\n")
        channel.flush()
        return 0
    except BaseException as error:  # the package's failure, reported in one line
        message = " ".join(str(error).split())[:300]
        channel.write(json.dumps({"medbench_error": f"{type(error).__name__}: {message}"}) + "\n")
        channel.flush()
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
