"""rldoctor: the on-call doctor for Ray RLlib clusters."""

__version__ = "0.1.0"
