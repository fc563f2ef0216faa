"""Storage: the on-disk format of a version, writing and reading shards, digests, durable file steps, verify.

Nothing here knows about names, refs or the catalog; the layers above talk to
these modules only through their public names.
"""
