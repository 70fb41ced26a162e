"""Fleet analytics: a Parquet store of many clusters' replicas, and the Spark jobs that rank them by imbalance.

The only package that imports pyspark (only core.fleet.jobs and, lazily, core.fleet.spark do). Entry points:

- core.fleet.export    snapshot -> store (`fleet export`, `fleet collect`); core.fleet.generate: synthetic fleets
- core.fleet.collect_spark  `fleet collect --spark MASTER`: the same collection, one Spark task per cluster
- core.fleet.jobs      run_jobs(input_dir, output_dir, master="local[*]", progress=callback) and the transforms
- core.fleet.outputs   read_cluster_scores / read_broker_metrics / read_topic_broker (pandas, no Spark)
- core.fleet.reference the same metrics in pandas (the definitions, and the benchmark's baseline)
"""
