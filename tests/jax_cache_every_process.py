"""Imported first by the test launchers of several JAX processes (tests/test_jax_multihost.py):
every process writes its compiled programs to the persistent compilation cache.

JAX 0.6 writes the cache from process 0 only, and another process's programs have other keys
(its process index is in the compile options), so without this every launch of process 1
compiles the training step again (15 s of the 2 cores). Where this JAX has no
`_cache_write`, nothing changes (the tests only get slower).
"""

from __future__ import annotations

from jax._src import compiler, distributed

_write = getattr(compiler, "_cache_write", None)


def _cache_write(*args, **kwargs):
  """JAX's `_cache_write`, run as if by process 0 (the one JAX lets write)."""
  process_id = distributed.global_state.process_id
  distributed.global_state.process_id = 0
  try:
    return _write(*args, **kwargs)
  finally:
    distributed.global_state.process_id = process_id


if _write is not None:
  compiler._cache_write = _cache_write  # pylint: disable=protected-access
