"""interfaces.cli."""
