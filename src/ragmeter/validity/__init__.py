"""How far a judge can be trusted: calibration of an escalating (cheap-then-strong) judge, judge cards."""
