"""Helpers the tests import: data builders, live servers, drivers run as subprocesses. Fixtures live in conftest.py."""
