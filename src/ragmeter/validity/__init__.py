"""How far a judge can be trusted: agreement statistics (kappa, alpha, Kendall's tau, tau_AP), judge validation
against people's labels, human labels (import, export, PPI), LLM-made qrels and their meta-evaluation, the
provenance of judged qrels, judge cards and the calibration of an escalating (cheap-then-strong) judge.
Comparisons of runs and ablation grids stay in ragmeter.experiments."""
