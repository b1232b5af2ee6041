"""interfaces.web."""
