"""Taking a topic apart without losing work (DESIGN §9).

``teardown`` is one pipeline: facts, then decisions, then actions.

- facts.py: what teardown knows of each repo before acting, and its options;
  host_policy.py: the host's removal of its worktree as a policy value.
- decide.py: what each step does, from the facts and the steps before it;
  act.py: a repo's steps carried out in order; teardown.py: the command.
- steps.py: what a step is (Step, Outcome, StepResult, Decision, StepRun).
- One module per step: integrate.py, remove.py (with blockers.py), branch.py
  (branch and verify-gone), update.py, plan_dir.py; the sweep and local-state
  steps beside their mechanisms in sweep.py and localstate.py.
- Shared concepts: proof.py (the merge proof), primary.py (the primary clone),
  record.py (the topic record's teardown marks), nested.py (repositories inside
  a worktree), unshipped.py (a run's artifacts).
- snapshot.py writes and reads snapshots; restore.py brings them back;
  restore_journal.py finishes or undoes a restore a kill stopped.
- prcleanup.py is ``pr-cleanup``: cleanup_survey.py (its facts), cleanup_checks.py
  (its refusals), remote.py (origin's branch), abandon.py, merged.py, prs.py, reclaim.py.
"""
