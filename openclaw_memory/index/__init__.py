"""Semantic index: Markdown chunking, token counting, embeddings, the vector store and search.

Nothing is imported eagerly here: the embedding model and the engine cost seconds to load,
and commands that never embed (``search --mode text``, a no-op ``index``) must not pay for them.
"""
