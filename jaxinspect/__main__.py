"""Entry point for ``python -m jaxinspect``."""

from jaxinspect.cli import main

main()
