"""Reading shards: the reader (``ArrowBackend``), one open shard, opening a file safely, and what a process keeps.

``batches`` checks each record batch against its digest the first time a process reads it; ``kept`` and
``open_files`` keep what was opened for the next reader of the same file.
"""
