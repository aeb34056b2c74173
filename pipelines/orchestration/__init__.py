"""What the Dagster layer and the CLI share that imports no Dagster: which partitions a selection
needs and what they cost (``plan``), the outcome of each (``report``) and the process's specs and
plug-ins, loaded once (``plugins``). A layer of its own under ``pipelines.dagster``
(docs/concepts.md, "Inside pipelines"), so that these can be read, tested and imported without Dagster.
"""
