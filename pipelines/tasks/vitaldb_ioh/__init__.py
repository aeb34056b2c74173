"""The vitaldb-ioh family: ``family.py`` (the registered TaskFamily), ``settings.py`` (``[ioh]``),
``cohort.py``, ``grid.py``, ``windows.py``, ``split.py``, ``instances.py`` (the windows Parquet),
``baselines.py`` (window scorers), ``score.py`` (AUROC and the typed extras)."""
