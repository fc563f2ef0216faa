"""The on-disk model of a version: ``_metadata.json`` and its checks, the files kept beside it, the digests.

``cache_meta`` reads and checks ``_metadata.json`` into a ``ShardedCacheMeta``; ``metadata`` is what a version
records about itself and the version id it implies; ``sidecars``, ``spliced_file``, ``splices``, ``content_runs``,
``cell_patches`` and ``row_segments`` are the small files a save links or splices; ``version_files`` names them
all; ``hashing`` defines the file, row and content digests.
"""
