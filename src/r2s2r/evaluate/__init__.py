"""Evaluation on the lab (or a simulated world): the fixed trial list, batched rollouts, honest statistics,
sim-vs-lab agreement, tables."""

from r2s2r.evaluate.agreement import (
    Agreement,
    Interval,
    TrialAgreement,
    agreement,
    bootstrap,
    check_paired,
    mmrv,
    paired_agreement,
    pearson,
    pearson_note,
)
from r2s2r.evaluate.agreement_report import (
    AgreementTable,
    agreement_figure,
    agreement_markdown,
    agreement_table,
    write_agreement,
)
from r2s2r.evaluate.cells import EvalCell, LabCell, WorldCell
from r2s2r.evaluate.compare import check_same_trials, design_effects, paired_against_first
from r2s2r.evaluate.policies import RandomPolicy, ScriptedOperator, TrialPolicy, policy_kind, resolve_policy
from r2s2r.evaluate.results import EvalResults, TrialOutcome
from r2s2r.evaluate.runner import EvalConfig, evaluate
from r2s2r.evaluate.stats import (
    Effect,
    PairedComparison,
    Rate,
    contrast,
    factorial_effects,
    mcnemar_exact,
    newcombe_paired,
    paired_comparison,
    wilson,
    wilson_interval,
)
from r2s2r.evaluate.tables import comparison_table, effects_table, results_table
from r2s2r.evaluate.trials import Trial, TrialList, TrialPlan, make_trials

__all__ = [
    "Agreement",
    "AgreementTable",
    "Effect",
    "EvalCell",
    "EvalConfig",
    "EvalResults",
    "Interval",
    "LabCell",
    "PairedComparison",
    "RandomPolicy",
    "Rate",
    "ScriptedOperator",
    "Trial",
    "TrialAgreement",
    "TrialList",
    "TrialOutcome",
    "TrialPlan",
    "TrialPolicy",
    "WorldCell",
    "agreement",
    "agreement_figure",
    "agreement_markdown",
    "agreement_table",
    "bootstrap",
    "check_paired",
    "check_same_trials",
    "comparison_table",
    "contrast",
    "design_effects",
    "effects_table",
    "evaluate",
    "factorial_effects",
    "make_trials",
    "mcnemar_exact",
    "mmrv",
    "newcombe_paired",
    "paired_against_first",
    "paired_agreement",
    "paired_comparison",
    "pearson",
    "pearson_note",
    "policy_kind",
    "resolve_policy",
    "results_table",
    "wilson",
    "wilson_interval",
    "write_agreement",
]
