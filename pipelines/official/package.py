"""A submitted package: a wheel exposing one entry point in group ``medbench.official``.

The contract (docs/official-tier.md): the entry point is a callable ``predict(instances, context)``
that takes an iterable of the task's public instances (dicts; never a label or an answer) and a
context dict (task ref, kind, the answer field, the model), and yields one dict per instance:
``{"instance_id", "output"}`` for choice tasks (raw text, parsed by the task's own parser) or
``{"instance_id", "score"}`` for score tasks (a probability of the event, in [0, 1]).

What makes a file an acceptable wheel is the storage layer's (``medbench.packages``: the API checks
an upload with the same code); installing it (wheels only, so no build code runs) and running it
happen in the sandbox (``run.py``).
"""

from medbench.packages import (
    GROUP, PackageFailed, accept_wheel, check_wheel, max_package_bytes, sha256_of, wheel_filename, wheel_name_problem,
)

__all__ = ["GROUP", "PackageFailed", "accept_wheel", "check_wheel", "max_package_bytes", "sha256_of", "wheel_filename",
           "wheel_name_problem"]
