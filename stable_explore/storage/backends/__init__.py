"""Where versions live: the storage protocol and its local and object-store backends.

``protocol`` is what the catalog asks of a home; ``local`` and ``object`` implement it on a directory and on a
bucket. ``fsutil`` holds the durable, atomic steps on a local disk and ``locks`` the lock files beside what they
guard. ``read_cache``, ``remote_file`` and ``remote_ranges`` fetch a bucket's bytes by range requests (knowing bytes,
not shards: ``read.remote_shards`` makes shards of them).
"""
