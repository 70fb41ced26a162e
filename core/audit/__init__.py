"""The audit trail: the SQLite store of executed and refused actions (who, what, when, result, rollback JSON)."""
