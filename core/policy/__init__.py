"""Who may change which cluster, and the one gate every write passes: keel.toml read from disk (config.py), roles
per cluster (access.py, pure) and the write gate (gate.py: role, read_only, migration state, refusals audited)."""
