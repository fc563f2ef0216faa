"""Parallel builds and the pools of worker processes the package starts.

``executor`` runs a build's tasks on an executor (a process pool, Dask, Ray) and joins their shards in
order, and gives every pool of ours (``owned_pool``); ``tasks`` cuts a generator's list arguments into
tasks and is what a worker runs; ``code_places`` points a worker's traceback at the user's own lines;
``owner_watch`` ends a worker whose parent process is gone; ``kept_pool`` keeps a signal's pool for the next
call.
"""
