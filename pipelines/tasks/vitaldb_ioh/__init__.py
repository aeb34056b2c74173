"""The vitaldb-ioh family: ``family.py`` (the registered TaskFamily), ``settings.py`` (``[ioh]``),
``cohort.py``, ``grid.py``, ``windows.py``, ``split.py``, ``instances.py`` (the windows Parquet),
``reporting.py`` (the clinical report's probabilities and subgroups), ``score.py`` (AUROC, the typed
extras and the clinical report; the window scorers are the backends', ``pipelines.backends.window_scorers``)."""
