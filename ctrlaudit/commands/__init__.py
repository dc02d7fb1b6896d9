"""One module per command group; each has `register(app)`."""
