#!/usr/bin/env bash
# `make run`: local ZooKeeper -> seeded demo cluster -> controller emulator (background) -> Streamlit (foreground).
# `make run KAFKA=real`: local ZooKeeper -> 3 REAL Kafka brokers (chroot /keel-real) -> demo topics created through
# Keel, filled with data, one broker stopped -> Streamlit; no emulator.
# `make run KAFKA=kraft`: 3 REAL KRaft nodes (broker + controller each, Kafka $KAFKA_VERSION, default 4.4.0), no
# ZooKeeper -> the same demo topics created through the Admin API, filled, node 3 stopped -> Streamlit.
# Ctrl-C in Streamlit stops the controller (or the brokers), and ZooKeeper too if this script started it; so does a
# TERM or an INT to make alone (the watchdog below sees make stop) and the death of whoever started it (make
# killed outright).
# `scripts/run.sh --stop` (make stop) stops whatever a previous run left behind.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ZK_PORT="${ZK_PORT:-2181}"
PORT="${PORT:-8501}"
RUN_DIR="$(realpath -m "${RUN_DIR:-.run}")"   # absolute: KEEL_CONFIG below points into it
export RUN_DIR   # all runtime state follows it: the action history (core.audit.store), the fleet store, Kafka's jars
ZK_DIR="$RUN_DIR/zk"
CONTROLLER_PID="$RUN_DIR/controller.pid"
CONTROLLER_LOG="$RUN_DIR/controller.log"
ZK_STARTED_MARK="$RUN_DIR/zk.started-by-run"
ZK="127.0.0.1:${ZK_PORT}/keel-demo"
KAFKA="${KAFKA:-}"                                # "real" / "kraft": real Kafka instead of the sandbox and its emulator
KAFKA_DIR="$RUN_DIR/kafka-cluster"                 # sandbox.processes.kafka's run folder: configs, data, logs, pids
KAFKA_STARTED_MARK="$RUN_DIR/kafka.started-by-run"
REAL_ZK="127.0.0.1:${ZK_PORT}/keel-real"
KRAFT_DIR="$RUN_DIR/kraft-cluster"                 # the KRaft nodes' run folder (sandbox.processes.kraft)
KRAFT_STARTED_MARK="$RUN_DIR/kraft.started-by-run"
KRAFT_VERSION_DEFAULT=4.4.0                        # the newest Kafka 4 on Maven Central (tests/kafka KRAFT_VERSIONS)
case "$KAFKA" in
    ""|sandbox|real|kraft) ;;
    *) echo "run.sh: KAFKA must be unset (the sandbox), real or kraft, not '$KAFKA'" >&2; exit 2 ;;
esac
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

# The real brokers (or KRaft nodes), by the PIDs in their run folder (sandbox.processes.kafka checks each is still
# that broker's JVM): controlled shutdown, then SIGKILL. Only a cluster this script started (a previous run's, after
# a crash, too).
stop_kafka() {
    local dir mark
    for pair in "$KAFKA_DIR:$KAFKA_STARTED_MARK" "$KRAFT_DIR:$KRAFT_STARTED_MARK"; do
        dir="${pair%%:*}" mark="${pair#*:}"
        [ -f "$mark" ] || continue
        "$PY" -m sandbox kafka down --dir "$dir" || true
        rm -f "$mark"
    done
}

# KEEL_CONFIG for a real cluster: the [keel]/[auth] settings of KEEL_CONFIG (else keel.toml) and one cluster, $1,
# whose keys (zk, bootstrap, description) are the TOML lines $2.
write_cluster_config() {
    local base="${KEEL_CONFIG:-$PWD/keel.toml}"
    KEEL_CONFIG="$RUN_DIR/keel.toml"
    { awk '/^\[clusters[].]/ {exit} {print}' "$base"
      printf '[clusters.%s]\n%s\n' "$1" "$2"
    } > "$KEEL_CONFIG.tmp"
    mv "$KEEL_CONFIG.tmp" "$KEEL_CONFIG"
    export KEEL_CONFIG
    echo "cluster config: $KEEL_CONFIG"
}

stop_zk() {
    "$PY" -m sandbox.processes.zkserver stop --dir "$ZK_DIR"
    rm -f "$ZK_STARTED_MARK"
}

if [ "${1:-}" = "--stop" ]; then
    stop_controller
    stop_kafka
    stop_zk
    exit 0
fi

mkdir -p "$RUN_DIR"

# 1. ZooKeeper (leave a server someone else started running when we are done); a KRaft cluster needs none
if [ "$KAFKA" = "kraft" ]; then
    :
elif "$PY" -m sandbox.processes.zkserver status --dir "$ZK_DIR" >/dev/null 2>&1; then
    echo "ZooKeeper already running from $ZK_DIR; it will be left running"
    "$PY" -m sandbox.processes.zkserver start --port "$ZK_PORT" --dir "$ZK_DIR"   # fails if it runs on another port
else
    "$PY" -m sandbox.processes.zkserver start --port "$ZK_PORT" --dir "$ZK_DIR"
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
    stop_kafka   # before ZooKeeper: a controlled shutdown needs it
    if [ -f "$ZK_STARTED_MARK" ]; then stop_zk; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A parent that dies without passing a signal on (make under SIGKILL or the OOM killer, a killed tmux) would
# orphan ZooKeeper, the controller and Streamlit: watch it and stop with it. PID 1 (a container) has no parent.
# GNU make passes a TERM on to this script but not an INT sent to make alone (`kill -INT <make>`): it stops
# catching INT and TERM and waits for its children, forever. Its caught-signal mask (SigCgt in /proc) changing
# is how the watchdog sees that make was told to stop.
PARENT_PID=$PPID
caught() { awk '/^SigCgt:/ {print $2}' "/proc/$1/status" 2>/dev/null || true; }
MAKE_PID=""
for pid in "$PPID" "$(awk '{print $4}' "/proc/$PPID/stat" 2>/dev/null || true)"; do   # make, or make's shell
    if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "make" ]; then MAKE_PID=$pid; break; fi
done
if [ "$PARENT_PID" -gt 1 ]; then
    (
        make_caught="$( [ -n "$MAKE_PID" ] && caught "$MAKE_PID" )"
        while kill -0 "$PARENT_PID" 2>/dev/null; do
            if [ -n "$MAKE_PID" ] && [ "$(caught "$MAKE_PID")" != "$make_caught" ]; then break; fi
            sleep 0.5
        done
        kill -TERM $$ 2>/dev/null
    ) &
    WATCHDOG_PID=$!
fi

if [ "$KAFKA" = "real" ]; then
    # 2r. Real brokers: Apache Kafka's jars (fetched once into RUN_DIR/kafka/<version>), 3 brokers in their own
    #     chroot, started in the background (their own session: Ctrl-C reaches this script, which stops them).
    scripts/kafka.sh fetch
    if ! "$PY" -m sandbox kafka status --dir "$KAFKA_DIR" >/dev/null 2>&1; then touch "$KAFKA_STARTED_MARK"; fi
    up="$("$PY" -m sandbox kafka up --zk "$REAL_ZK" --dir "$KAFKA_DIR" --brokers 3)"
    echo "$up"
    BOOTSTRAP="$(sed -n 's/^bootstrap servers: //p' <<<"$up")"

    # 3r. The dashboard's cluster list: one cluster, `real`, with the brokers' bootstrap servers (partition sizes and
    #     cancel through the Admin API).
    write_cluster_config real "$(printf 'zk = "%s"\nbootstrap = "%s"\ndescription = "%s"' "$REAL_ZK" "$BOOTSTRAP" \
        "Real Apache Kafka brokers started by make run KAFKA=real")"

    # 4r. Demo topics created through Keel (Kafka's placement, rack-aware), data written so that partitions have real
    #     sizes (sandbox/demo.py), then broker 3 stopped so that the Overview shows a broker down. A topic left by an
    #     earlier run is kept.
    "$PY" -m sandbox demo-topics --bootstrap-server "$BOOTSTRAP" --zk "$REAL_ZK" --cluster real \
        --store "$RUN_DIR/keel.sqlite"
    "$PY" -m sandbox kafka broker stop 3 --dir "$KAFKA_DIR"
elif [ "$KAFKA" = "kraft" ]; then
    # 2k. Three combined broker + controller nodes (every one a quorum voter, racks rack-a..c, two log dirs each),
    #     Kafka KAFKA_VERSION (default 4.4.0, fetched once), in the background like the real brokers above.
    export KAFKA_VERSION="${KAFKA_VERSION:-$KRAFT_VERSION_DEFAULT}"
    scripts/kafka.sh fetch
    if ! "$PY" -m sandbox kafka status --dir "$KRAFT_DIR" >/dev/null 2>&1; then touch "$KRAFT_STARTED_MARK"; fi
    up="$("$PY" -m sandbox kafka up --kraft --dir "$KRAFT_DIR" --brokers 3)"
    echo "$up"
    BOOTSTRAP="$(sed -n 's/^bootstrap servers: //p' <<<"$up")"

    # 3k. One cluster, `kraft`, with bootstrap servers and no zk: Keel reads it through the Admin API.
    write_cluster_config kraft "$(printf 'bootstrap = "%s"\ndescription = "%s"' "$BOOTSTRAP" \
        "Real Apache Kafka $KAFKA_VERSION KRaft cluster started by make run KAFKA=kraft")"

    # 4k. The same demo topics, created through the Admin API (no ZooKeeper to write through), filled with data;
    #     then node 3 stopped: the Overview shows a broker down and a quorum voter behind.
    "$PY" -m sandbox demo-topics --bootstrap-server "$BOOTSTRAP"
    "$PY" -m sandbox kafka broker stop 3 --dir "$KRAFT_DIR"
else
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
"$PY" -m sandbox up --zk "$ZK" --demo --keep-existing

# 4. Controller emulator in the background. ZooKeeper credentials, if any, reach it (and `sandbox up` above)
#    through the environment ($KEEL_ZK_DIGEST) or a file (--zk-digest-file), never as --zk-digest: a command
#    line is readable by every user of the machine (ps, /proc/PID/cmdline) for as long as the process runs.
stop_controller
nohup "$PY" -m sandbox controller --zk "$ZK" >>"$CONTROLLER_LOG" 2>&1 &
echo $! > "$CONTROLLER_PID"
echo "controller emulator running (pid $(cat "$CONTROLLER_PID"), log $CONTROLLER_LOG)"
fi

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
