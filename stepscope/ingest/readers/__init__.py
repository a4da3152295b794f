"""The readers, one module per format, behind one protocol: ``sniff(path)`` says whether a file is
the reader's, ``read(path, pool, diags)`` turns it into a :class:`~.batch.FileBatch` (compact tables
with string ids in ``pool``, losses in ``diags``).

==============  ===========================================================================
reader          files
==============  ===========================================================================
``ascend_db``   the Ascend PyTorch profiler's database (``ascend_pytorch_profiler_N.db``)
``nsys_sqlite`` an Nsight Systems SQLite export (``nsys export --type sqlite``)
``ascend_csv``  an Ascend export of CSV/JSON summaries only (``kernel_details.csv`` ...)
``pftrace``     a Perfetto protobuf trace (``.pftrace``: PyTorch's CUPTI backend), plain or gzip
``kineto``      PyTorch profiler / Kineto chrome-trace JSON, plain or gzip, including the Ascend
                text export's ``trace_view.json`` (:mod:`.ascend`): every other file
==============  ===========================================================================

:func:`.protocol.reader_for` asks them in that order. The engines (:mod:`stepscope.ingest.engines`)
read Kineto files through :func:`.kineto.read_kineto_files`, which decodes the chunks of many files
in one process pool, and every other file with its reader's ``read``.
"""
