"""`mq mcp`: the admin API's reads (and, when allowed, a few writes) as Model Context Protocol tools."""
