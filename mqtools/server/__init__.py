"""Server roles (installed as mqtools.server): name server, broker, store, HA, launcher."""
