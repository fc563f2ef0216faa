"""Stand-ins for the modules of neighbouring tools, so their own tests can run against stable-explore.

:mod:`stable_explore.compat.stable_datasets` answers to the names stable-datasets' code and its own
tests import (``benchmarks/compat_stable_datasets.py`` runs them). Nothing in the
package imports this one: it is a facade for users and for that runner.
"""
