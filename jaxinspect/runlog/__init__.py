"""The compile log of a real program: every JAX compilation it did, where, how long, and why."""
