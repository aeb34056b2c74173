"""VitalDB: ``dataset.py`` (the registered Dataset), ``source.py`` (snapshot: read, hash, write),
``openers.py`` (API and mirror-folder readers, decoding), ``demo.py`` (the synthetic API folder)."""
