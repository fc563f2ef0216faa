"""Fingerprints of what a build reads, which decide a cache hit (``catalog.plan`` compares them).

``fingerprint`` hashes the code a build runs, the values it reads and the paths they name;
``code_tokens`` says what is the user's own code and digests it; ``file_state`` lists the files under a
path a build reads, so a changed file is a cache miss.
"""
