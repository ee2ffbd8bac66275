"""How far a judge can be trusted: judge cards (agreement with people, self-consistency over repeats, a
bias battery of perturbations, self-judging, drift anchors). The older judge-validation code lives in
ragmeter.experiments (judge_validation, agreement, qrels_judging) and is used from here."""
