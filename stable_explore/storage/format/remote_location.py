"""Where a version's files really are, as a value: a home URL (no credentials) and the version's key prefix in it.

Opening the home's store, and saying what a failed read means, are the backends' (``backends.remote_file``).

Examples
--------
>>> where = RemoteLocation("s3://bucket/cache", "name/versions/v1")
>>> where.key("shard_00000.arrow")
'name/versions/v1/shard_00000.arrow'
>>> where.describe("_metadata.json")
's3://bucket/cache/name/versions/v1/_metadata.json'
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RemoteLocation"]


@dataclass(frozen=True)
class RemoteLocation:
    """Where a version's files really are: a home URL (no credentials) and the version's key prefix in it."""

    url: str
    prefix: str

    def key(self, filename: str) -> str:
        """The storage key of one of the version's files."""
        return f"{self.prefix}/{filename}"

    def describe(self, filename: str) -> str:
        """``s3://bucket/cache/name/versions/<id>/<filename>``, for messages."""
        return f"{self.url}/{self.key(filename)}"
