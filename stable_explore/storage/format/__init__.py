"""The on-disk model of a version: ``_metadata.json`` and its checks, the files kept beside it, the digests.

Values only: nothing here imports a store, a reader or a writer. ``cache_meta`` checks ``_metadata.json``
(parsed) into a ``ShardedCacheMeta``; ``metadata`` is what a version records about itself and the version
id it implies; ``sidecars``, ``spliced_file``, ``splices``, ``content_runs``, ``cell_patches`` and
``row_segments`` are the records of the small files a save links or splices (read by
``storage.read.small_files``, written by ``storage.write.small_files``); ``version_files`` names them all;
``hashing`` defines the file, row and content digests.
"""
