#!/usr/bin/env bash
# Install the system packages Keel needs, and only those that are missing (Debian/Ubuntu, apt-get).
#   zookeeper             -> /usr/share/java/zookeeper.jar (the sandbox and test ZooKeeper server)
#   default-jre-headless  -> java (ZooKeeper, PySpark)
#   chromium chromium-driver -> headless browser for the end-to-end tests
#   maven                 -> mvn (scripts/kafka.sh fetches Apache Kafka's jars from Maven Central)
#   postgresql            -> initdb, postgres (the audit store's tests start a throwaway server: sandbox/processes/pgserver.py)
set -euo pipefail

missing=()
[ -f /usr/share/java/zookeeper.jar ] || missing+=(zookeeper)
command -v java >/dev/null 2>&1 || missing+=(default-jre-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    missing+=(postgresql)
fi
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
    missing+=(chromium chromium-driver)
fi

if [ ${#missing[@]} -eq 0 ]; then
    echo "deps: system packages present (zookeeper, java, maven, postgresql, chromium, chromedriver)"
    exit 0
fi

echo "deps: missing system packages: ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=(sudo)
else
    echo "deps: not root and no passwordless sudo; install them yourself:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "deps: apt-get not found; install the equivalent of: ${missing[*]}" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
