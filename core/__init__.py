"""Keel's engine: pure planning logic plus the only adapters to ZooKeeper, Spark and SQLite."""
