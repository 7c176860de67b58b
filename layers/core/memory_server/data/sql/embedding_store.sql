-- Store claimed records' vectors, unless their text changed since; count one more
-- attempt for those the embedder failed.
SELECT memory.embedding_store(%(ids)s, %(hashes)s, %(vectors)s, %(model)s, %(dimensions)s,
                              %(failed)s) AS stored
