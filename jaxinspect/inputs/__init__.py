"""What a run is asked: target, spec grammar, cases, factories, transforms, the bound call."""
