"""ClinicalQA: ``dataset.py`` (the registered Dataset), ``source.py`` (loader, validation, snapshot),
``hub.py`` (Hugging Face download), ``demo.py`` + ``vignettes.py`` (the synthetic demo rows)."""
