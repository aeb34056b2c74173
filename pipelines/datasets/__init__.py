"""One folder per dataset (real loader and mirror reader, demo generator, ``dataset.py``), behind the
``Dataset`` protocol (``base.py``) and registered in ``registry.py``."""
