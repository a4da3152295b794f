"""How stepscope runs its work, apart from what the work is: column threads (:mod:`.parallel`),
the fork pool of decoding processes and its result pipe (:mod:`.pool`), numpy's huge-page hint
while a trace is built (:mod:`.hugepages`), glibc's heap settings for one-shot commands (:mod:`.heap`),
independent calls on threads (:mod:`.tasks`: a rank's analyses) and writes left to a thread until a
block ends (:mod:`.deferred`: the cache entry while a command's analyses run). The model, ingest,
analyses and compare use these; nothing here knows a trace.
"""
