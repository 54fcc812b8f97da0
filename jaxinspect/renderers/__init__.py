"""What every report's renderers share: table fitting, number formats, stdout, JSON encoding."""
