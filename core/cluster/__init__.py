"""What does not depend on how Keel reaches a cluster: which engine writes to it (engines)."""
