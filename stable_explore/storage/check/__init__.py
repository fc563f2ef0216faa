"""Checking a version end to end: every shard's digest and structure, and the digest of its rows.

``verify`` checks a local version; ``remote_verify`` checks a version in a bucket the same way.
"""
