"""Reading shards: one reader per backend behind one protocol, one open shard, opening a file safely, what is kept.

``protocol`` is the shape every reader has; ``reader.open_reader`` picks one (``mapped`` for a local disk,
``remote`` for a bucket, over ``remote_shards``' record batches fetched by range; ``table_reader`` for an
in-memory table); ``sharded`` is what readers of shard files share (routing rows over ``layout``'s segments,
and ``patching``, the one place cell patches are applied). ``batches`` checks each record batch against its
digest the first time a process reads it; ``open_files`` keeps what was opened for the next reader of the same
file (in the caches of ``storage.kept``). ``open_meta`` opens a version's ``_metadata.json`` against its files;
``small_files`` reads the small files beside it (fetched from a bucket when first needed).
"""
