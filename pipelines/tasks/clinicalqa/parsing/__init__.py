"""The versioned answer parser of choice tasks: which option did a free-text reply commit to?

``tokens`` holds what every version shares (the answer token pattern, normalisation of a reply,
the answer markers, ``ParseResult``); ``v1`` (frozen: it scored published results) and ``v2`` are
the versions, each importing only ``tokens`` (``v2_rules`` is v2's own token and hedge rules);
``v3`` reimplements v2's reading in its own modules (``v3_scan``: tokens and hedges read in bounded
work, ``v3_base``: v2's statements, ``v3_reading``: v2's final-statement rule read lazily,
``v3_find``: scans skipped or narrowed where nothing can match) with its own rules (``v3_rules``),
and never imports v1 or v2;
``versions`` is the one table from a version string to its parser, which every caller uses. A new
version is one new module plus one entry in that table; an old version is never edited, because
its results must stay reproducible. This package module imports nothing, so importing
``tokens`` alone does not pull in every version.
"""
