"""Real servers on loopback: zkserver (one ZooKeeper; standard library only), zkensemble, kafka (+ kafka_setup)."""
