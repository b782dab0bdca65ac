"""Retrieval benchmarks: the LegalBench-RAG loader and the built-in synthetic contracts dataset."""
