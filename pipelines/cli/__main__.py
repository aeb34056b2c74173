"""`python -m pipelines.cli` is the `medbench` command."""

import sys

from pipelines.cli.main import main

sys.exit(main())
