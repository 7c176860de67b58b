-- Queue every record not embedded by the model (the backfill's first step).
SELECT memory.embedding_requeue(%(model)s) AS waiting
