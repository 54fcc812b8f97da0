"""``recompile``: one jitted function over every case, and why each recompiles."""
