"""The benchmark harness (not part of the library): run configurations built from the components' own settings
(:mod:`.config`, :mod:`.components`), building the parts (:mod:`.factories`), the runner (:mod:`.runner`) and the
``eval`` job around it (:mod:`.eval_job`), the typed, versioned results (:mod:`.results`), reports (:mod:`.report`,
:mod:`.html_report`), the embedding cache (:mod:`.cache`), staged output folders (:mod:`.output`) and what a run
records about its machine (:mod:`.environment`), and the ``eval`` and ``report`` commands (:mod:`.commands`).

Nothing is imported here: ``import llama_index_sac.apps.benchmark.results`` loads only what it needs.
"""
