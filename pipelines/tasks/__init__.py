"""One folder per task family behind the ``TaskFamily`` protocol (``base.py``), registered in
``registry.py``."""
