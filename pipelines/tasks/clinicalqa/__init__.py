"""The clinicalqa family: ``family.py`` (the registered TaskFamily), ``settings.py`` (``[choice]``),
``items.py`` (prompts), ``parser.py`` (answer parser), ``score.py`` (predictions table, metrics)."""
