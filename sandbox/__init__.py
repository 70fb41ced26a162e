"""Keel's sandbox: what `make run`, the tests and the benches run Keel against, never shipped with it.

processes/ starts and stops real servers (ZooKeeper, an ensemble, Apache Kafka brokers), emulator/ plays a
ZooKeeper-mode Kafka controller in a real ZooKeeper, seed.py writes a simulated cluster, cli.py is
`python -m sandbox`. It may import core; core and dashboard never import it. Imports nothing here: zkserver runs
under the system python (standard library only) before the venv exists.
"""
