"""The pytest plugin (entry point `pytest11`): scenario files as test items, and fixtures."""
