"""The core: what the engine, the families, the datasets, the backends and the API share, importing
nothing of the project (stdlib, numpy, pyarrow and msgspec only), so that none of them needs another
to describe what it hands over."""
