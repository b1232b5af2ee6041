"""models.decentralized."""
