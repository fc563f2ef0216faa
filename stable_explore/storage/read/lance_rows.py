"""Reading a Lance dataset (stable-datasets' ``lance-rows`` cache, or any Lance dataset): a mirror in Arrow shards.

Our reader maps Arrow IPC shards; Lance keeps its rows in its own file format. So a Lance
dataset is opened by copying its rows once, fragment by fragment and batch by batch (bounded
memory), into a stable-datasets format-1 layout (Arrow shards and version-1 metadata, no row keys) under
``<local home>/.foreign/lance-<digest>/``. The Lance folder itself is only read, never written.
The digest covers the folder's resolved path, its ``_metadata.json`` (if any) and the name, size
and modification time of every file under ``_versions/``, so a rewritten Lance dataset gets a new
mirror and an unchanged one opens again at once.

Examples
--------
>>> import tempfile, pathlib, pyarrow as pa, lance
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = lance.write_dataset(pa.table({"x": [1, 2, 3]}), str(folder / "d.lance"))
>>> mirror = lance_mirror(folder / "d.lance", root=folder / "mirrors")
>>> read_sharded_cache_meta(mirror).num_rows
3
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc

from stable_explore._optional import require
from stable_explore.errors import CacheCorruptionError, NotACacheError, SchemaError
from stable_explore.storage.backends.fsutil import publish_dir, temp_dir_beside
from stable_explore.storage.format.cache_meta import METADATA_FILE, SHARD_NAME_FMT
from stable_explore.storage.read.open_meta import read_sharded_cache_meta

__all__ = ["default_mirror_root", "is_lance_dataset", "lance_identity", "lance_mirror", "read_sharded_cache_meta"]

MIRROR_FORMAT = 1  # changes when what a mirror holds changes: old mirrors are then left for new ones


def default_mirror_root() -> Path:
    """``.foreign`` in the local home (``$STABLE_EXPLORE_HOME`` when a folder, else ``~/.cache/stable-explore``)."""
    home = os.environ.get("STABLE_EXPLORE_HOME", "").strip()  # the catalog's HOME_ENV (storage cannot import it)
    if home and "://" not in home:
        return Path(home).expanduser() / ".foreign"
    return Path.home() / ".cache" / "stable-explore" / ".foreign"


def is_lance_dataset(folder: Path) -> bool:
    """A Lance dataset's folder: ``_versions/`` with ``.manifest`` files."""
    try:
        versions = folder / "_versions"
        return versions.is_dir() and any(p.suffix == ".manifest" for p in versions.iterdir())
    except OSError:
        return False


def lance_identity(folder: Path) -> str:
    """A digest of the Lance dataset as it is now (it names mirrors): path, metadata, manifests' names, sizes, times."""
    parts: list[object] = [MIRROR_FORMAT, str(folder.resolve())]
    meta_path = folder / METADATA_FILE
    if meta_path.is_file():
        parts.append(hashlib.sha256(meta_path.read_bytes()).hexdigest())
    for entry in sorted((folder / "_versions").iterdir()):
        stat = entry.stat()
        parts.append([entry.name, stat.st_size, stat.st_mtime_ns])
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:20]


def _check_column_names(folder: Path, schema: pa.Schema) -> None:
    """Refuse columns no dataset can hold (an empty name: Lance itself cannot read it back), naming them.

    Such a dataset is whole, not damaged: its writer gave a column no name.
    """
    if "" in schema.names:
        others = [name for name in schema.names if name]
        msg = (
            f"the Lance dataset at {folder} has a column with an empty name ('', column "
            f"{schema.names.index('')} of {len(schema.names)}), which Lance cannot read back and a dataset "
            f"cannot hold; the data is not damaged: write it again with a name for that column "
            f"(table.rename_columns([...]) before lance.write_dataset); its other columns: {others}"
        )
        raise SchemaError(msg)


def lance_mirror(folder: Path | str, *, root: Path | None = None) -> Path:
    """The format-1 Arrow mirror of the Lance dataset in ``folder`` (written on first use): its directory.

    Raises
    ------
    NotACacheError
        ``folder`` holds no Lance dataset.
    CacheCorruptionError
        Lance cannot read it (the message names the folder and Lance's reason).
    """
    folder = Path(folder).expanduser()
    if not is_lance_dataset(folder):
        msg = "no Lance dataset here (no _versions/ with a .manifest file)"
        raise NotACacheError(folder, msg)
    lance = require("lance", "lance", "opening a Lance dataset")
    target = (root if root is not None else default_mirror_root()) / f"lance-{lance_identity(folder)}"
    if (target / METADATA_FILE).is_file():
        return target
    try:
        dataset = lance.dataset(str(folder))
        fragments = dataset.get_fragments()
        schema = dataset.schema
    except (OSError, ValueError, RuntimeError) as exc:
        raise CacheCorruptionError(folder, f"Lance cannot open it: {exc}") from exc
    _check_column_names(folder, schema)
    with temp_dir_beside(target) as tmp:
        names: list[str] = []
        counts: list[int] = []
        for position, fragment in enumerate(fragments):
            name = SHARD_NAME_FMT.format(position)
            rows = 0
            with pa.OSFile(str(tmp / name), "wb") as sink, ipc.new_file(sink, schema) as writer:
                try:
                    for batch in fragment.to_batches():
                        writer.write_batch(batch)
                        rows += batch.num_rows
                except (OSError, ValueError, RuntimeError) as exc:
                    msg = f"Lance cannot read fragment {position}: {exc}"
                    raise CacheCorruptionError(folder, msg) from exc
            names.append(name)
            counts.append(rows)
        if not names:  # no fragment (no rows): one empty shard keeps the schema, and so the features
            names.append(SHARD_NAME_FMT.format(0))
            counts.append(0)
            with pa.OSFile(str(tmp / names[0]), "wb") as sink, ipc.new_file(sink, schema):
                pass
        meta = {
            "cache_format_version": 1,
            "num_rows": sum(counts),
            "num_shards": len(names),
            "shard_row_counts": counts,
            "shard_filenames": names,
            "schema_fingerprint": "",
            "mirror_of": {"lance": str(folder.resolve()), "lance_version": int(dataset.version)},
        }
        (tmp / METADATA_FILE).write_text(json.dumps(meta, indent=2))
        publish_dir(tmp, target)
    return target
