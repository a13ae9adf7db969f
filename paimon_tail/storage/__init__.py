"""Storage as it really is: remote until proven local.

``snapshots``: snapshot files read at one request per poll on object stores; ``errors``: storage failures named by
their root cause, transient or permanent; ``retry``: the one retry policy and the outage status it keeps.
"""
