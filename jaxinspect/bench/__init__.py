"""``jaxinspect bench``: cold first-call phases in fresh processes and steady-state latency."""
