"""The ingest tool: ``llama-sac ingest`` / ``query``, a user's folders of contracts into a real vector store and back
(:mod:`.run`, :mod:`.writer`, :mod:`.commands`, :mod:`.files`, :mod:`.steps`, :mod:`.store`, :mod:`.query`,
:mod:`.ray_engine`).

Nothing is imported here.
"""
