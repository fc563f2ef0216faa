"""Keeping a home sound: checking it whole, and deleting what nothing points at.

``fsck`` checks a local home (``fsck_remote`` a bucket's) and names every problem; ``gc`` deletes
versions nothing points at and what dead builds left behind.
"""
