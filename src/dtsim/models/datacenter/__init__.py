"""models.datacenter."""
