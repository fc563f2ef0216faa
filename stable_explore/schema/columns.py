"""The names stable-explore reserves in every shard: the row key and row-hash columns, and the schema metadata key."""

from __future__ import annotations

KEY_COLUMN = "__key__"
HASH_COLUMN = "__row_hash__"
RESERVED_COLUMNS = (KEY_COLUMN, HASH_COLUMN)
FEATURES_SCHEMA_KEY = b"stable_explore.features"
