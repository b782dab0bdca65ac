"""The README's usage example: SAC in an IngestionPipeline, offline (all-MiniLM-L6-v2 + extractive summaries)."""

from llama_index.core import Document, VectorStoreIndex
from llama_index.core.ingestion import IngestionPipeline

from llama_index_sac import (
    ExtractiveSummarizer,
    RecursiveCharacterNodeParser,
    SummaryAugmentationTransformation,
    default_embedding_model,
    synthetic_contracts,
)

dataset = synthetic_contracts(n_documents=8)  # look-alike NDAs and service agreements with gold spans
docs = [Document(text=text, id_=doc_id) for doc_id, text in dataset.documents.items()]

pipeline = IngestionPipeline(
    transformations=[
        RecursiveCharacterNodeParser(chunk_size=500, chunk_overlap=0),  # the paper's 500 characters
        SummaryAugmentationTransformation(summarizer=ExtractiveSummarizer(max_chars=150)),  # one summary per doc
    ]
)
nodes = pipeline.run(documents=docs)
index = VectorStoreIndex(nodes, embed_model=default_embedding_model())
query = dataset.queries[0]
for hit in index.as_retriever(similarity_top_k=3).retrieve(query.query):
    print(f"{hit.node.ref_doc_id} [{hit.node.start_char_idx}:{hit.node.end_char_idx}] {hit.score:.3f}")
print("question:", query.query)
print("gold:", [(s.doc_id, s.start, s.end) for s in query.gold])
