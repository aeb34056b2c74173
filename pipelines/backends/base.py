"""What every model backend gives the pipeline, whatever runs underneath.

Choice tasks talk to *text generators* (prompts in, raw text out, checkpointed in a
GenerationStore); score tasks talk to *window scorers* (windows in, one float per window out).
Keeping that split means the parser and the metrics never know which backend produced the data.
The shapes are the core's (``medbench.outcomes``, ``medbench.protocols``), named here
for the backend modules that build on them.

Its file name is shared on purpose: every plug-in package names its parts alike
(docs/adding-a-task.md, "The pieces"), so one reads the next.
"""

from __future__ import annotations

from medbench.outcomes import PromptItem, Sampling, Usage
from medbench.protocols import TextGenerator, WindowScorer

__all__ = ["PromptItem", "Sampling", "TextGenerator", "Usage", "WindowScorer"]
