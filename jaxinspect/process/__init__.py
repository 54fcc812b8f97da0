"""Process plumbing: stdout/stderr, signals, the fast exit, the user-code guard, native logs."""
