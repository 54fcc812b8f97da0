"""The `topologies` command and the compile targets it lists: TPU slices and NVIDIA GPUs."""
