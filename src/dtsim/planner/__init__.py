"""Planning logic on top of the strategies: the seed-000 decision tree and the choice of H."""
