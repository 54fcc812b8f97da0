"""The multi-case ``stages`` comparison as a rich table and as JSON."""
