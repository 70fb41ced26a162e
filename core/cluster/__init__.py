"""What does not depend on how Keel reaches a cluster: the live connection (connection) and which engine writes
to it (engines)."""
