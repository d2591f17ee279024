"""Where a run stands: the phase table and its inference (``phase``, ``next``), ``status``,
and the gate records ``record`` writes (gates.py: each checks the phase before it writes).
"""
