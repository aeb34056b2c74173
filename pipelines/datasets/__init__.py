"""One folder per dataset (real loader and mirror reader, demo generator, ``dataset.py``), behind the
``Dataset`` protocol (``base.py``), each registered in the entry-point group ``medbench.datasets``."""
