"""Pure math shared by every app: cost, distributions, the gate, knees, diagnosis.

Nothing in this package imports Django; it works on plain numbers and dicts.
"""
