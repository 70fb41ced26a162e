"""ACLs and client quotas: the model (model.py), Kafka's authorizer and quota resolution (acls.py, quotas.py).
Pure: the readers and writers are core.zk.security_writes and core.kafka.security_writes."""
