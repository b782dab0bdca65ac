"""The Ray engine of ``llama-sac ingest --engine ray``: the transformations of one ingestion run as two Ray Data
``map_batches`` stages, inside an ordinary :class:`~llama_index_sac.ingestion.SACIngestionPipeline`.

Why not ``llama-index-ingestion-ray``'s ``RayIngestionPipeline``: it runs each transformation on batches of rows
that mix the chunks of different documents (a summary must be written from the WHOLE document), it has no place for
SAC's failed-summary rule, and version 0.3.0 calls ``IngestionPipeline._update_docstore`` without the
``effective_strategy`` argument that llama-index-core 0.14 requires, so a run with a docstore fails after the
transformations. Instead, :class:`RayStages` is one ``TransformComponent`` that the pipeline calls with the documents
its docstore selected (new and changed ones); everything else (docstore upserts, deletions, the vector-store write,
failed summaries) is the pipeline's, exactly as with the local engine.

Stages (Ray actors, ``ActorPoolStrategy(min_size=1, max_size=workers)`` each, one CPU per actor):

1. ``parse + summarize``: batches of whole Documents; each actor runs the same
   ``[parser, SummaryAugmentationTransformation]`` as the local engine on its batch, so every document is summarized
   once, from its whole text, with all of its chunks in the same call (identical summaries, ``summary_source`` and
   EMBED strings).
2. ``embed``: batches of chunks; each actor embeds them with its own copy of the embedding model (with a GPU
   device, each actor asks Ray for one GPU: ``embed_gpus``).

Rows travel as LlamaIndex's docstore JSON (``doc_to_json``), embeddings included, so nodes come back field for field;
they are returned in the order of the input documents, and of the parser within a document, whatever order Ray
finished them in. The builders passed to :class:`RayStages` are pickled to the workers (``cloudpickle``): they must
be picklable and build their components in the worker (models are loaded there, not shipped).
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from llama_index.core.bridge.pydantic import Field
from llama_index.core.schema import BaseNode, TransformComponent
from llama_index.core.storage.docstore.utils import doc_to_json, json_to_doc

__all__ = ["RAY_CONNECT_TIMEOUT", "RayStages", "check_ray_address", "ray_error_message", "ray_session"]

#: Seconds allowed to reach the cluster at ``RAY_ADDRESS`` (its GCS port) before Ray is asked to join it;
#: ``LLAMA_SAC_RAY_CONNECT_TIMEOUT`` overrides it.
RAY_CONNECT_TIMEOUT = 10.0


def check_ray_address(address: str, timeout: float | None = None) -> None:
    """Open (and close) a TCP connection to the ``host:port`` of a Ray address within ``timeout`` seconds, so that an
    address where no cluster answers fails at once instead of ``ray.init`` retrying for minutes. ``auto``,
    ``local`` and addresses without a port are left to Ray.

    Raises:
        ConnectionError: nothing accepted the connection in time (the message names the address and the limit).
    """
    import socket
    import urllib.parse

    if timeout is None:
        timeout = float(os.environ.get("LLAMA_SAC_RAY_CONNECT_TIMEOUT") or RAY_CONNECT_TIMEOUT)
    target = address.strip()
    parts = urllib.parse.urlsplit(target if "://" in target else f"//{target}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:  # a port that is not a number
        raise ConnectionError(f"RAY_ADDRESS {address!r} is not host:port") from None
    if not host or port is None or target in ("auto", "local"):
        return
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        raise ConnectionError(f"no Ray cluster answers at {host}:{port} within {timeout:g} s "
                              f"({type(exc).__name__}: {exc.strerror or exc}); set RAY_ADDRESS to a running "
                              "cluster's address, or unset it to start a local one") from None

#: Builds a stage's steps in a worker: callables ``nodes -> nodes`` (transformations, an embedding model).
StepsBuilder = Callable[[], Sequence[Callable[..., Sequence[BaseNode]]]]


@contextmanager
def ray_session() -> Iterator[dict[str, float]]:
    """A Ray cluster for the duration of the block; yields its resources (``{"CPU": 2.0, ...}``).

    Already initialized (e.g. by the caller's ``ray.init(...)``): used as it is and left running. Otherwise
    ``ray.init()`` joins the cluster at ``RAY_ADDRESS`` when that variable is set, else starts a local one on this
    machine (no dashboard), which is shut down at the end of the block.

    Raises:
        ImportError: Ray is not installed (the ``ray`` extra).
        ConnectionError: ``RAY_ADDRESS`` names a ``host:port`` that does not answer within the connect timeout
            (:func:`check_ray_address`).
    """
    import ray

    started = False
    if not ray.is_initialized():
        address = os.environ.get("RAY_ADDRESS") or None
        if address:
            check_ray_address(address)
        options: dict[str, Any] = {} if address else {"include_dashboard": False}
        with _quiet_ray():
            ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False, **options)
        started = True
    try:
        yield dict(ray.cluster_resources())
    finally:
        if started:
            ray.shutdown()


@contextmanager
def _quiet_ray() -> Iterator[None]:
    """Ray's Python loggers at ``ERROR`` while it starts and runs (``ray.init``'s ``logging_level``; Ray Data's
    too): routine notices (token authentication, progress bars turned off, execution statistics) are not the
    user's concern, and a real failure reaches the command as an exception. (Ray's C++ core still prints its own
    lines, e.g. one about Ray Data's actors and ``max_restarts``: only ``RAY_BACKEND_LOG_LEVEL`` set by the user
    silences it.)"""
    logging.getLogger("ray.data").setLevel(logging.ERROR)
    yield


_EXCEPTION_LINE = re.compile(r"([A-Za-z_][\w.]*(?:Error|Exception)): (.+)")


def ray_error_message(exc: BaseException) -> str:
    """What failed in a Ray worker, as ``"ExcType: message"``, without the remote traceback.

    Ray re-raises a worker's exception as ``RayTaskError(UserCodeException)`` whose text holds the remote traceback
    (the worker's own exception is not attached); the last ``Type: message`` line of a non-Ray exception in it is
    the cause. Other exceptions (or a text without such a line) give their own type and first line.
    """
    chain = [exc]
    while len(chain) < 20:
        inner = getattr(chain[-1], "cause", None) or chain[-1].__cause__
        if not isinstance(inner, BaseException) or inner in chain:
            break
        chain.append(inner)
    for item in chain:
        found = [m for m in (_EXCEPTION_LINE.fullmatch(line.strip()) for line in str(item).splitlines())
                 if m and not m.group(1).startswith("ray.") and m.group(1) not in _RAY_WRAPPERS]
        if found:
            return f"{found[-1].group(1)}: {found[-1].group(2)}"
    innermost = chain[-1]
    return f"{type(innermost).__name__}: {(str(innermost).strip().splitlines() or [''])[0]}"


_RAY_WRAPPERS = frozenset({"UserCodeException", "RayTaskError", "RayActorError", "ActorDiedError"})


class _StageActor:
    """A Ray Data actor: builds its steps once, then runs them on batches of serialized nodes."""

    document_stage = False

    def __init__(self, build: StepsBuilder) -> None:
        self.steps = list(build())

    def __call__(self, batch: Any) -> Any:
        import pyarrow as pa

        rows = batch.to_pylist()
        inputs = [json_to_doc(json.loads(row["node"])) for row in rows]
        order = {node.node_id: row["order"] for node, row in zip(inputs, rows)}
        nodes: Sequence[BaseNode] = inputs
        for step in self.steps:
            nodes = step(nodes)
        if self.document_stage:  # new rows: the chunks of the batch's documents, in parser order, and their number
            counters: dict[int, int] = {}
            out = []
            for node in nodes:
                doc_order = order[node.ref_doc_id or node.node_id]
                seq = counters.get(doc_order, 0)
                counters[doc_order] = seq + 1
                out.append({"node": json.dumps(doc_to_json(node)), "order": doc_order, "seq": seq})
            for item in out:
                item["count"] = counters[item["order"]]
        else:  # the same rows, embedded
            out = [{"node": json.dumps(doc_to_json(node)), "order": row["order"], "seq": row["seq"],
                    "count": row["count"]} for node, row in zip(nodes, rows)]
        return pa.Table.from_pylist(out, schema=pa.schema([("node", pa.string()), ("order", pa.int64()),
                                                           ("seq", pa.int64()), ("count", pa.int64())]))


class ParseAndSummarize(_StageActor):
    """Stage 1 (whole documents in, their summarized chunks out); the name shown in Ray's progress bars."""

    document_stage = True


class Embed(_StageActor):
    """Stage 2 (chunks in, the same chunks embedded out)."""


class RayStages(TransformComponent):
    """Parse + summarize, then embed, as two Ray Data stages (module docstring); the result equals running the
    steps in this process. Needs a running Ray (see :func:`ray_session`).

    Input: Documents (``Sequence[BaseNode]``); output: their embedded chunks (``list[BaseNode]``), in input order.

    Raises:
        Exception: whatever a stage raised in a worker, wrapped by Ray (see :func:`ray_error_message`).
    """

    parse_and_summarize: Any = Field(
        description="Picklable builder of the first stage's steps, e.g. [parser, SummaryAugmentationTransformation].")
    embed: Any = Field(description="Picklable builder of the second stage's steps: [embedding model].")
    workers: int = Field(default=2, ge=1, description="Maximum Ray actors per stage.")
    documents_per_batch: int = Field(default=8, ge=1, description="Whole documents per first-stage batch.")
    nodes_per_batch: int = Field(default=256, ge=1, description="Chunks per embedding batch.")
    embed_gpus: float = Field(default=0.0, ge=0.0, le=64.0, description="GPUs each embedding actor asks Ray for (0: "
                              "none; 1 with --device cuda: Ray starts one embedding actor per free GPU and shows it "
                              "that GPU alone).")
    show_progress: bool = Field(default=False, description="Ray Data's progress bars, one per stage.")

    @classmethod
    def class_name(cls) -> str:
        return "RayStages"

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        """Run both stages on the documents ``nodes``; returns their embedded chunks in input order."""
        done = dict(self.stream(nodes, **kwargs))
        return [node for i in range(len(nodes)) for node in done.get(i, [])]

    def stream(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Iterator[tuple[int, list[BaseNode]]]:
        """Run both stages on the documents ``nodes``; yields ``(index of the document in nodes, its embedded
        chunks in parser order)`` for each document as soon as all of its chunks are embedded (in the order they
        finish). A document that gives no chunk is not yielded."""
        if not nodes:
            return
        import ray.data

        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = bool(kwargs.get("show_progress", self.show_progress))
        context.print_on_execution_start = False
        context.enable_auto_log_stats = False
        items = [{"node": json.dumps(doc_to_json(node)), "order": i, "seq": 0, "count": 0}
                 for i, node in enumerate(nodes)]
        dataset: Any = ray.data.from_items(items, override_num_blocks=max(1, min(len(items), 4 * self.workers)))
        pool: dict[str, Any] = {
            "compute": ray.data.ActorPoolStrategy(min_size=1, max_size=self.workers), "num_cpus": 1,
            "batch_format": "pyarrow",
        }
        dataset = dataset.map_batches(ParseAndSummarize, fn_constructor_args=(self.parse_and_summarize,),
                                      batch_size=self.documents_per_batch, **pool)
        gpus = {"num_gpus": self.embed_gpus} if self.embed_gpus else {}
        dataset = dataset.map_batches(Embed, fn_constructor_args=(self.embed,), batch_size=self.nodes_per_batch,
                                      **pool, **gpus)
        pending: dict[int, list[tuple[int, str]]] = {}
        for row in dataset.iter_rows():  # streaming: rows come as the stages finish them
            chunks = pending.setdefault(row["order"], [])
            chunks.append((row["seq"], row["node"]))
            if len(chunks) == row["count"]:
                del pending[row["order"]]
                yield row["order"], [json_to_doc(json.loads(text)) for _, text in sorted(chunks)]
