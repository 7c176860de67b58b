-- Queue every record not embedded in the model's vector space (the backfill's first step).
SELECT memory.embedding_requeue(%(model)s, %(dimensions)s) AS waiting
