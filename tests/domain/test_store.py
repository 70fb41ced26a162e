"""The SQLite audit store: actions recorded before writes, finished after, plans saved."""

from core.audit.store import Store


def test_action_lifecycle(tmp_path):
    store = Store(tmp_path / "keel.sqlite")
    aid = store.begin(cluster="demo", kind="create-topic", target="orders", summary="create orders (3 x RF2)",
                      payload=[{"path": "/brokers/topics/orders", "data": "{}"}], rollback={"delete": "orders"},
                      actor="alice")
    pending = store.action(aid)
    assert (pending.status, pending.actor, pending.finished) == ("pending", "alice", None)
    store.finish(aid, ok=True, result="created")
    done = store.action(aid)
    assert done.status == "applied" and done.result == "created" and done.finished
    assert done.payload == [{"path": "/brokers/topics/orders", "data": "{}"}] and done.rollback == {"delete": "orders"}

    other = store.begin(cluster="prod", kind="delete-topic", target="x", summary="delete x", payload=[])
    store.finish(other, ok=False, result="Topic 'x' does not exist")
    assert [a.id for a in store.actions()] == [other, aid]  # newest first
    assert [a.id for a in store.actions("demo")] == [aid]
    assert store.actions(kind="delete-topic")[0].status == "failed"
    # a second Store on the same file sees the same history
    assert Store(tmp_path / "keel.sqlite").action(aid).summary == "create orders (3 x RF2)"


