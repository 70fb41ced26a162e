#!/usr/bin/env bash
# Apache Kafka jars for Keel's real-cluster tests and demo, resolved from Maven Central with mvn.
#
#   scripts/kafka.sh fetch   copy Kafka's broker + tools (and their runtime dependencies) into
#                            $RUN_DIR/kafka/$KAFKA_VERSION/lib; does nothing when that folder is complete
#   scripts/kafka.sh lib     print that folder (exit 3 when it is not complete yet)
#
# KAFKA_VERSION (default 3.9.1) picks another version; RUN_DIR (default .run, relative to the repository) the
# cache folder. The folder is complete when its marker file (written last) names the same version, Scala build,
# profile, pom and jar count; anything else is fetched again from scratch. Kafka 4.x (KRaft only) logs through
# log4j 2 (the pom's `log4j2` profile). Needs `mvn` (`make deps` installs
# Debian's maven). Older versions (`make test-kafka-matrix`): before 3.5 the tools are inside kafka_2.1x and the
# logging backend is log4j 1.2 + slf4j-log4j12 (the pom's `legacy` profile); before 2.4 there is no Scala 2.13
# build, so kafka_2.12 is used (KAFKA_SCALA=2.12|2.13 overrides the choice).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

KAFKA_VERSION="${KAFKA_VERSION:-3.9.1}"

# version_lt A B: A < B in version order (2.4.1 < 2.10.0).
version_lt() {
    [ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -1)" = "$1" ]
}
if version_lt "$KAFKA_VERSION" 2.4.0; then SCALA_DEFAULT=2.12; else SCALA_DEFAULT=2.13; fi
KAFKA_SCALA="${KAFKA_SCALA:-$SCALA_DEFAULT}"
if version_lt "$KAFKA_VERSION" 3.5.0; then PROFILE=legacy
elif version_lt "$KAFKA_VERSION" 4.0.0; then PROFILE=tools
else PROFILE=log4j2; fi
RUN_DIR="$(realpath -m "${RUN_DIR:-.run}")"
POM="$PWD/scripts/kafka/pom.xml"
DEST="$RUN_DIR/kafka/$KAFKA_VERSION"
LIB="$DEST/lib"
MARKER="$DEST/.fetched"
LOG="$DEST/fetch.log"

usage() {
    sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

expected_marker() {
    local pom_sum
    pom_sum="$(sha256sum "$POM" | cut -d' ' -f1)"
    printf 'version=%s\nscala=%s\nprofile=%s\npom=%s\njars=%s\n' "$KAFKA_VERSION" "$KAFKA_SCALA" "$PROFILE" "$pom_sum" "$1"
}

complete() {
    [ -f "$MARKER" ] && [ -d "$LIB" ] || return 1
    local jars
    jars="$(find "$LIB" -maxdepth 1 -name '*.jar' | wc -l)"
    [ "$(cat "$MARKER")" = "$(expected_marker "$jars")" ]
}

fail() {
    echo "kafka.sh: $*" >&2
    echo "kafka.sh: retry with: KAFKA_VERSION=$KAFKA_VERSION scripts/kafka.sh fetch   (or: make kafka-fetch)" >&2
    exit 1
}

fetch() {
    if complete; then
        echo "kafka: $KAFKA_VERSION already fetched ($LIB)"
        return 0
    fi
    command -v mvn >/dev/null 2>&1 \
        || fail "mvn not found: install Maven with \`make deps\` (Debian: apt-get install maven)"
    mkdir -p "$DEST"
    rm -f "$MARKER"
    local tmp="$DEST/lib.tmp.$$"
    rm -rf "$tmp"
    trap 'rm -rf "$tmp"' EXIT
    echo "kafka: fetching Apache Kafka $KAFKA_VERSION (kafka_$KAFKA_SCALA, $PROFILE) from Maven Central into $LIB ..."
    local start=$SECONDS
    local legacy=()
    [ "$PROFILE" = legacy ] && legacy=(-Dkafka.legacy -Dkafka.logging=log4j)
    [ "$PROFILE" = log4j2 ] && legacy=(-Dkafka.logging=log4j2)
    if ! mvn -q -B -U -ntp -Dstyle.color=never -f "$POM" -Dkafka.version="$KAFKA_VERSION" \
            -Dscala.binary.version="$KAFKA_SCALA" "${legacy[@]}" \
            dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" >"$LOG" 2>&1; then
        # mvn -q prints only errors; the first [ERROR] lines name the artifact that could not be resolved.
        local what
        what="$(grep -E 'Could not (resolve|find|transfer)|Failed to (collect|read|execute)|Non-resolvable|Unknown host|Connection' "$LOG" \
                | sed -e 's/\x1b\[[0-9;]*m//g' -e 's/^\[ERROR\] *//' -e 's/ -> \[Help 1\]$//' | head -5)"
        [ -n "$what" ] || what="$(grep -m5 'ERROR' "$LOG" || tail -5 "$LOG")"
        fail "fetching Kafka $KAFKA_VERSION with mvn failed:
$what
(full mvn output: $LOG)"
    fi
    local jars
    jars="$(find "$tmp" -maxdepth 1 -name '*.jar' | wc -l)"
    local needed=("kafka_$KAFKA_SCALA-$KAFKA_VERSION.jar" "kafka-clients-$KAFKA_VERSION.jar")
    [ "$PROFILE" != legacy ] && needed+=("kafka-tools-$KAFKA_VERSION.jar")
    for jar in "${needed[@]}"; do
        [ -f "$tmp/$jar" ] || fail "mvn finished but $jar is missing from the copied jars (see $LOG)"
    done
    if [ "$PROFILE" = log4j2 ]; then
        ls "$tmp"/log4j-core-*.jar "$tmp"/log4j-slf4j-impl-*.jar >/dev/null 2>&1 \
            || fail "mvn finished but log4j-core / log4j-slf4j-impl are missing: the broker would log nothing (see $LOG)"
    elif [ "$PROFILE" = tools ]; then
        ls "$tmp"/reload4j-*.jar "$tmp"/slf4j-reload4j-*.jar >/dev/null 2>&1 \
            || fail "mvn finished but reload4j / slf4j-reload4j are missing: the broker would log nothing (see $LOG)"
    else
        ls "$tmp"/log4j-1.2*.jar "$tmp"/slf4j-log4j12-*.jar >/dev/null 2>&1 \
            || fail "mvn finished but log4j 1.2 / slf4j-log4j12 are missing: the broker would log nothing (see $LOG)"
    fi
    rm -rf "$LIB"
    mv "$tmp" "$LIB"
    trap - EXIT
    expected_marker "$jars" >"$MARKER.tmp"
    mv "$MARKER.tmp" "$MARKER"   # last: the folder is complete only once this exists
    echo "kafka: $KAFKA_VERSION fetched: $jars jars, $(du -sh "$LIB" | cut -f1) in $LIB ($((SECONDS - start)) s)"
}

case "${1:-}" in
    fetch) fetch ;;
    lib)
        if complete; then echo "$LIB"; else echo "kafka.sh: Kafka $KAFKA_VERSION is not fetched yet: run scripts/kafka.sh fetch" >&2; exit 3; fi ;;
    -h|--help|help) usage ;;
    *) usage >&2; exit 2 ;;
esac
