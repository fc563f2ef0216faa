"""Writing a version: examples to encoded record batches, shards and ``_metadata.json``.

``writer`` is the build's writing path, ``shards`` writes numbered Arrow IPC shards digested as they are written,
``key_check`` finds duplicate keys in bounded memory and ``merge`` joins the shards of a parallel build in order;
``small_files`` writes (or links from a parent) the small files beside ``_metadata.json`` and the fields naming them.
"""
