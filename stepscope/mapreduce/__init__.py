"""Map-reduce analysis of many ranks in bounded memory (docs/scale.md).

Each rank file is read and analysed alone, in a worker (the local engine's forked processes, or a
Ray task), which sends back a compact :class:`~stepscope.mapreduce.worker.RankSummary`; the driver
combines the summaries into the same §12 document the whole-model path makes, holding summaries
only, never events (:func:`~stepscope.mapreduce.driver.map_reduce`).
"""
