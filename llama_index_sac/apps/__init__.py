"""The applications built on the library: the benchmark (``llama-sac eval`` / ``report``, :mod:`.benchmark`) and
the ingest tool (``llama-sac ingest`` / ``query``, :mod:`.ingest`), with the ``llama-sac`` command (:mod:`.cli`).

The library never imports them. Nothing is imported here.
"""
