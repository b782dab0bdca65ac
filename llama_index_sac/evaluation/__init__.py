"""Retrieval evaluation: span metrics, the evaluator, the benchmark runner and its reports."""
