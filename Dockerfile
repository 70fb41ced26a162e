# Keel in a container: the dashboard plus a local sandbox ZooKeeper. Runs as the unprivileged user `keel`.
#   docker build -t keel .
#   docker run --rm -p 8501:8501 keel                                  # demo: sandbox cluster + dashboard
#
# Nobody signs in by default ([auth] mode = "none"), and the dashboard listens on 0.0.0.0 inside the container, so
# the demo is view-only for everyone who reaches it. Your own clusters and sign-in (README, "Pointing Keel at a real
# cluster"; nothing of this is baked into the image: .dockerignore keeps .streamlit/secrets.toml, .venv and .run out).
# keel.toml is mounted and named by KEEL_CONFIG; oidc's provider settings are .streamlit/secrets.toml, mounted
# read-only; ZooKeeper digests (KEEL_ZK_DIGEST_<CLUSTER>) and the proxy's shared secret (KEEL_PROXY_SECRET) come
# from the environment; the action history lives in the volume /var/lib/keel:
#   docker run --rm -p 8501:8501 \
#       -v $PWD/my-keel.toml:/etc/keel/keel.toml:ro -e KEEL_CONFIG=/etc/keel/keel.toml \
#       -v $PWD/secrets.toml:/app/.streamlit/secrets.toml:ro \
#       -e KEEL_ZK_DIGEST_PROD_EU1 -e KEEL_PROXY_SECRET \
#       -v keel-state:/var/lib/keel \
#       keel .venv/bin/python -m streamlit run dashboard/streamlit_app.py --server.address 0.0.0.0 --server.port 8501
FROM python:3.11-slim-bookworm

ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Java for ZooKeeper and PySpark; the Debian zookeeper package provides /usr/share/java/zookeeper.jar.
# make lets `docker run ... make zk-start` etc. work; procps gives ps/pgrep for debugging.
RUN apt-get update \
    && apt-get install -y --no-install-recommends default-jre-headless zookeeper make procps \
    && rm -rf /var/lib/apt/lists/*

# The user the dashboard runs as, and the one directory it writes: RUN_DIR (action history, ZooKeeper data, fleet
# store). The code and the venv stay owned by root: the running process cannot change them.
RUN useradd --system --create-home --uid 10001 --user-group keel \
    && mkdir -p /var/lib/keel \
    && chown keel:keel /var/lib/keel

WORKDIR /app

# Dependencies first, so that code changes do not reinstall them. The venv lives where the Makefile expects it,
# and the stamp tells `make venv` it is up to date.
COPY requirements.txt .
RUN python -m venv .venv \
    && .venv/bin/pip install -r requirements.txt \
    && touch .venv/.installed

COPY . .
# Keel itself, editable and without dependencies (the `keel` command); then the stamp `make venv` checks, since
# COPY may have given requirements.txt a newer mtime than the install above, which used this exact file.
RUN .venv/bin/pip install --no-deps -e . && touch .venv/.installed

EXPOSE 8501
VOLUME ["/var/lib/keel"]

# Inside the container the dashboard must listen on 0.0.0.0 so that `-p 8501:8501` can reach it; the port is only
# exposed on the host when you publish it. Outside a container Keel binds 127.0.0.1 (see scripts/run.sh).
# The default command runs the same sequence as `make run` (ZooKeeper, demo cluster, controller emulator,
# dashboard) with the dashboard bound to 0.0.0.0, which makes it view-only until sign-in is configured.
ENV KEEL_BIND_ADDRESS=0.0.0.0 \
    RUN_DIR=/var/lib/keel \
    HOME=/home/keel
USER keel
CMD ["scripts/run.sh"]
