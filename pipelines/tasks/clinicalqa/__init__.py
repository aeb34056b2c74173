"""The clinicalqa family: ``family.py`` (the registered TaskFamily), ``settings.py`` (``[choice]``),
``items.py`` (prompts), ``parsing/`` (the versioned answer parser), ``score.py`` (predictions table, metrics)."""
