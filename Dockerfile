# Keel in a container: the dashboard plus a local sandbox ZooKeeper.
#   docker build -t keel .
#   docker run --rm -p 8501:8501 keel                                  # demo: sandbox cluster + dashboard
#   docker run --rm -p 8501:8501 -v $PWD/my-keel.toml:/etc/keel/keel.toml -e KEEL_CONFIG=/etc/keel/keel.toml keel \
#       .venv/bin/python -m streamlit run dashboard/streamlit_app.py --server.address 0.0.0.0 --server.port 8501
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

# Inside the container the dashboard must listen on 0.0.0.0 so that `-p 8501:8501` can reach it; the port is only
# exposed on the host when you publish it. Outside a container Keel binds 127.0.0.1 (see scripts/run.sh).
# The default command runs the same sequence as `make run` (ZooKeeper, demo cluster, controller emulator,
# dashboard) with the dashboard bound to 0.0.0.0.
ENV KEEL_BIND_ADDRESS=0.0.0.0
CMD ["scripts/run.sh"]
