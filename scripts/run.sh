#!/usr/bin/env bash
# `make run`: local ZooKeeper -> seeded demo cluster -> controller emulator (background) -> Streamlit (foreground).
# Ctrl-C in Streamlit stops the controller, and ZooKeeper too if this script started it; so does a TERM to make
# (make passes it on) and the death of whoever started it (make killed outright).
# `scripts/run.sh --stop` (make stop) stops whatever a previous run left behind.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ZK_PORT="${ZK_PORT:-2181}"
PORT="${PORT:-8501}"
RUN_DIR="$(realpath -m "${RUN_DIR:-.run}")"   # absolute: KEEL_CONFIG below points into it
ZK_DIR="$RUN_DIR/zk"
CONTROLLER_PID="$RUN_DIR/controller.pid"
CONTROLLER_LOG="$RUN_DIR/controller.log"
ZK_STARTED_MARK="$RUN_DIR/zk.started-by-run"
ZK="127.0.0.1:${ZK_PORT}/keel-demo"
if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi

stop_controller() {
    [ -f "$CONTROLLER_PID" ] || return 0
    local pid
    pid="$(cat "$CONTROLLER_PID" 2>/dev/null || true)"
    # only signal it if the pid still is our controller (pid files outlive processes)
    if [ -n "$pid" ] && tr '\0' ' ' 2>/dev/null < "/proc/$pid/cmdline" | grep -q "sandbox controller"; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        echo "controller emulator stopped (pid $pid)"
    fi
    rm -f "$CONTROLLER_PID"
}

stop_zk() {
    "$PY" -m core.sandbox.zkserver stop --dir "$ZK_DIR"
    rm -f "$ZK_STARTED_MARK"
}

if [ "${1:-}" = "--stop" ]; then
    stop_controller
    stop_zk
    exit 0
fi

mkdir -p "$RUN_DIR"

# 1. ZooKeeper (leave a server someone else started running when we are done)
if "$PY" -m core.sandbox.zkserver status --dir "$ZK_DIR" >/dev/null 2>&1; then
    echo "ZooKeeper already running from $ZK_DIR; it will be left running"
    "$PY" -m core.sandbox.zkserver start --port "$ZK_PORT" --dir "$ZK_DIR"   # fails if it runs on another port
else
    "$PY" -m core.sandbox.zkserver start --port "$ZK_PORT" --dir "$ZK_DIR"
    touch "$ZK_STARTED_MARK"
fi

STREAMLIT_PID=""
WATCHDOG_PID=""
cleanup() {
    trap - EXIT INT TERM
    echo
    if [ -n "$WATCHDOG_PID" ]; then kill "$WATCHDOG_PID" 2>/dev/null || true; fi
    if [ -n "$STREAMLIT_PID" ] && kill -0 "$STREAMLIT_PID" 2>/dev/null; then
        kill -TERM "$STREAMLIT_PID" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$STREAMLIT_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$STREAMLIT_PID" 2>/dev/null || true
    fi
    stop_controller
    if [ -f "$ZK_STARTED_MARK" ]; then stop_zk; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A parent that dies without passing a signal on (make under SIGKILL or the OOM killer, a killed tmux) would
# orphan ZooKeeper, the controller and Streamlit: watch it and stop with it. PID 1 (a container) has no parent.
PARENT_PID=$PPID
if [ "$PARENT_PID" -gt 1 ]; then
    ( while kill -0 "$PARENT_PID" 2>/dev/null; do sleep 1; done; kill -TERM $$ 2>/dev/null ) &
    WATCHDOG_PID=$!
fi

# 2. The dashboard's cluster list: KEEL_CONFIG if set, else keel.toml (its demo cluster assumes port 2181).
if [ -z "${KEEL_CONFIG:-}" ]; then
    if [ "$ZK_PORT" = "2181" ]; then
        KEEL_CONFIG="$PWD/keel.toml"
    else
        KEEL_CONFIG="$RUN_DIR/keel.toml"
        sed "s#127\.0\.0\.1:2181/#127.0.0.1:${ZK_PORT}/#" keel.toml > "$KEEL_CONFIG"
    fi
fi
export KEEL_CONFIG
echo "cluster config: $KEEL_CONFIG"

# 3. Seed the simulated Kafka cluster.
"$PY" -m core sandbox up --zk "$ZK" --demo --keep-existing

# 4. Controller emulator in the background. ZooKeeper credentials, if any, reach it (and `sandbox up` above)
#    through the environment ($KEEL_ZK_DIGEST) or a file (--zk-digest-file), never as --zk-digest: a command
#    line is readable by every user of the machine (ps, /proc/PID/cmdline) for as long as the process runs.
stop_controller
nohup "$PY" -m core sandbox controller --zk "$ZK" >>"$CONTROLLER_LOG" 2>&1 &
echo $! > "$CONTROLLER_PID"
echo "controller emulator running (pid $(cat "$CONTROLLER_PID"), log $CONTROLLER_LOG)"

# 5. The dashboard. Started as a child we `wait` for, so that a signal to this script alone (docker stop -> PID 1)
#    runs the cleanup at once instead of after Streamlit happens to exit. 127.0.0.1 unless told otherwise (the
#    Dockerfile sets KEEL_BIND_ADDRESS=0.0.0.0 inside its container).
BIND="${KEEL_BIND_ADDRESS:-127.0.0.1}"
echo "Keel dashboard: http://127.0.0.1:${PORT}   (Ctrl-C to stop)"
"$PY" -m streamlit run dashboard/streamlit_app.py --server.address "$BIND" --server.port "$PORT" &
STREAMLIT_PID=$!
set +e
wait "$STREAMLIT_PID"
status=$?
set -e
exit "$status"
