"""The outputSchema agent loop and its forced-completion phase."""
