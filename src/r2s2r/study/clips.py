"""Which lab trials of a policy the report films: per condition kind, one success and one failure
where there are any, found in as few waves as possible.

The rule is a function of the outcomes (in trial order) and the evaluation's batch only. The groups
are the (kind, success) pairs that occur. Waves are taken greedily: the wave holding the most groups
not yet covered (ties: the earliest wave), until every group is covered; each group's trial is its
lowest-indexed trial in a taken wave. Filming ran whole waves again before evaluations kept their
actions (``r2s2r.evaluate.film``), so fewer waves was less to run; it replays the chosen trials alone
now, and the rule stays so that a study's clips stay the trials they were.
"""

from __future__ import annotations

from collections.abc import Sequence

from r2s2r.errors import ConfigError
from r2s2r.evaluate.results import TrialOutcome
from r2s2r.world.conditions import KINDS

CLIP_RULE = "per condition kind the lowest-indexed success and failure within the fewest waves, taken greedily"


def choose_clips(outcomes: Sequence[TrialOutcome], batch: int) -> list[int]:
    """Trial indices to film, ascending (``outcomes`` in trial order, trial ``i`` in wave ``i // batch``)."""
    if batch < 1:
        raise ConfigError(f"choose_clips: expected a batch >= 1, got {batch}")
    if [o.index for o in outcomes] != list(range(len(outcomes))):
        raise ConfigError("choose_clips: expected every outcome of a trial list, in trial order")
    groups: dict[tuple[str, bool], list[int]] = {}
    for o in outcomes:
        if o.kind not in KINDS:
            raise ConfigError(f"choose_clips: trial {o.index} has kind {o.kind!r}; expected one of {KINDS}")
        groups.setdefault((o.kind, o.success), []).append(o.index)
    in_wave: dict[int, set[tuple[str, bool]]] = {}
    for g, trials in groups.items():
        for i in trials:
            in_wave.setdefault(i // batch, set()).add(g)
    taken: list[int] = []
    left = set(groups)
    while left:
        w = max(sorted(in_wave), key=lambda w: len(in_wave[w] & left))  # max keeps the first of equals
        taken.append(w)
        left -= in_wave[w]
    return sorted(min(i for i in trials if i // batch in taken) for trials in groups.values())
