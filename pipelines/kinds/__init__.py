"""Moved to ``medbench.kinds`` (docs/concepts.md, "The layers"); this old package stays for plug-ins: its
modules are the new ones under their old names, and a name taken from it is the new package's
(each warns once, ``medbench.old_paths``)."""

import medbench.kinds
from medbench.old_paths import alias_package

__getattr__ = alias_package(__name__, medbench.kinds)
