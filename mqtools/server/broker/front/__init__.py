"""Front workers: processes that take a broker's client connections off its store's loop (frontWorkers). The link
between them and the store process (link.py, sans-IO; endpoint.py, one end over asyncio), a worker (worker.py),
and the store process's side (relay.py)."""
