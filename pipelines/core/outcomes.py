"""Moved to ``medbench.outcomes`` (docs/concepts.md, "The layers"); this old path stays for plug-ins: it is the
same module object, and it warns once (``medbench.old_paths``)."""

import medbench.outcomes
from medbench.old_paths import alias_module

alias_module(__name__, medbench.outcomes)
