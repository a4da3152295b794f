"""How stepscope runs its work, apart from what the work is: column threads (:mod:`.parallel`),
the fork pool of decoding processes and its result pipe (:mod:`.pool`), and numpy's huge-page hint
while a trace is built (:mod:`.hugepages`). The model, ingest and compare use these; nothing here
knows a trace.
"""
