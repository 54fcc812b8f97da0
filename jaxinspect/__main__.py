"""Entry point for ``python -m jaxinspect``."""

from jaxinspect.cli.entry import main

main()
