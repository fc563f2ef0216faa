"""Storage: the on-disk format of a version, writing and reading shards, digests, durable file steps, verify.

Sub-packages say what they hold: ``format`` (the on-disk model and the files beside ``_metadata.json``),
``backends`` (the storage protocol, the local and object-store homes, file locks and durable steps), ``read``
(the shard reader), ``write`` (the shard writer) and ``check`` (verify). Nothing here knows about names, refs or
the catalog; the layers above talk to these modules only through their public names. ``kept`` (every cache this
process keeps of files it read) sits below them all.

The sub-packages import down this order only: ``format`` < ``backends`` < ``read`` and ``write`` < ``check``
(tests/test_layers.py checks it).
"""
