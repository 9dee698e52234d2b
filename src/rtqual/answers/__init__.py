"""Answers: pure judgements of results. Verdicts, requirements and profiles, the capability summary, spike
analysis."""
