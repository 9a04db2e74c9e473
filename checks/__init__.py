"""rldoctor's built-in checks, one module per area.

Every check is a pure function of a Snapshot; none of these modules imports ray.
"""
