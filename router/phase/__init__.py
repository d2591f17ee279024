"""Where a run stands: the phase table and its inference (``phase``, ``next``) and ``status``."""
